import type { PublishedAddresses } from '../../generated';
import type { Clock, Timer } from '../../lib/clock';
import type { AgentAddresses, RelocationEffects } from './effects';

/**
 * How long the client may be silent (it beats every second) before the agent looks whether it
 * listens elsewhere now: long enough that a client busy for a few seconds (a large replay, a
 * long GC) does not send every agent to the database, far below the agent's
 * heartbeatTimeoutMs (30 s by default), so that it finds the new addresses before it gives up
 * on its client.
 */
export const SILENCE_BEFORE_LOOKING_MS = 5_000;
/** How often it looks while the client stays silent. */
export const LOOK_EVERY_MS = 2_000;

/** SILENCE_BEFORE_LOOKING_MS, or half of a shorter heartbeatTimeoutMs (<= 0: none). */
export function silenceBeforeLookingMs(heartbeatTimeoutMs: number): number {
  return heartbeatTimeoutMs > 0
    ? Math.min(SILENCE_BEFORE_LOOKING_MS, heartbeatTimeoutMs / 2)
    : SILENCE_BEFORE_LOOKING_MS;
}

/**
 * Where `pilot`'s agent connects for published addresses: their control socket, and the
 * pilot's own sockets where they list the pilot (a pilot not listed keeps its own: its client
 * did not bind it again, or it was submitted after those addresses were published).
 */
export function destination(
  current: AgentAddresses,
  published: PublishedAddresses,
  pilot: string,
): AgentAddresses {
  const own = published.pilots.find((p) => p.uid === pilot);
  const files = own?.files ?? current.files;
  const store = own?.store ?? current.store;
  return {
    controlDown: published.controlDown,
    controlUp: own?.controlUp ?? current.controlUp,
    agentInput: own?.agentInput ?? current.agentInput,
    managerOutput: own?.managerOutput ?? current.managerOutput,
    ...(files !== undefined ? { files } : {}),
    ...(store !== undefined ? { store } : {}),
  };
}

function same(a: AgentAddresses, b: AgentAddresses): boolean {
  return (
    a.controlDown === b.controlDown &&
    a.controlUp === b.controlUp &&
    a.agentInput === b.agentInput &&
    a.managerOutput === b.managerOutput &&
    a.files === b.files &&
    a.store === b.store
  );
}

/**
 * Decides when an agent of a MongoDB session looks where its client listens and whether it
 * moves there. A resumed client that could not listen where its agents connect (another
 * machine, a port taken) publishes its new addresses in the session's database with a higher
 * epoch (docs/state-store.md, "Session resume"). While the agent hears no client for
 * `silenceMs`, it asks for them every `everyMs`, one read at a time; addresses of a higher
 * epoch than the one it uses move its connections (only those that changed), once.
 */
export class RelocationCore {
  /** 0: the bootstrap file's addresses. */
  private epoch = 0;
  private lastHeard: number;
  private reading = false;
  private timer: Timer | undefined;
  private stopped = false;

  constructor(
    private readonly effects: RelocationEffects,
    private readonly clock: Clock,
    private readonly opts: { pilot: string; silenceMs: number; everyMs: number },
    private current: AgentAddresses,
  ) {
    this.lastHeard = clock.now();
  }

  /** The epoch of the addresses in use. */
  get inUse(): { epoch: number; addresses: AgentAddresses } {
    return { epoch: this.epoch, addresses: this.current };
  }

  /** The agent starts: its client's silence counts from now. */
  onStart(): void {
    if (this.stopped || this.timer !== undefined) return;
    this.lastHeard = this.clock.now();
    this.arm();
  }

  /** A heartbeat (or any sign of life) from the client. */
  onHeartbeat(): void {
    this.lastHeard = this.clock.now();
  }

  /** The published addresses (undefined: none yet, epoch 0). */
  onRead(published: PublishedAddresses | undefined): void {
    this.reading = false;
    if (this.stopped || published === undefined || published.epoch <= this.epoch) return;
    const to = destination(this.current, published, this.opts.pilot);
    this.epoch = published.epoch;
    if (same(to, this.current)) return; // e.g. a pilot launched after they were published
    const from = this.current;
    this.current = to;
    // the new client's heartbeats take a moment to arrive: not a silence to look into again
    this.lastHeard = this.clock.now();
    this.effects.move(from, to, published.epoch);
  }

  /** The read failed (no server, say): the next look tries again. */
  onReadFailed(): void {
    this.reading = false;
  }

  /** The agent shuts down: it looks no more, and what a read still brings is ignored. */
  onStop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  private arm(): void {
    this.timer = this.clock.setTimeout(() => this.look(), this.opts.everyMs);
  }

  private look(): void {
    if (this.stopped) return;
    if (!this.reading && this.clock.now() - this.lastHeard >= this.opts.silenceMs) {
      this.reading = true;
      this.effects.read();
    }
    this.arm();
  }
}
