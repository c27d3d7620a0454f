import { randomUUID } from 'node:crypto';
import type { ControlMessage } from '../generated';
import { ValidationError, errorMeta } from '../errors';
import { withTimeout } from '../lib/deferred';
import type { Logger } from '../lib/logger';
import { parseControlMessage } from '../lib/validate';
import type { ClientSecurity } from './curve';
import type { Decoded } from './frames';
import { Publisher, Subscriber } from './pubsub';
import { BadMessages } from '../lib/bad-messages';

type Listener = (msg: ControlMessage) => void;

/** The longest wait between two probes of ready(). */
const PROBE_MAX_MS = 20;
/** Messages held for a bus's first listener, at most. */
const EARLY_MAX = 1_000;

type WithoutSession<T> = T extends unknown ? Omit<T, 'session'> : never;
/** What a caller publishes: the bus stamps its own session on everything but probes. */
export type OutgoingControl = WithoutSession<Exclude<ControlMessage, { type: 'probe' }>>;

/**
 * A process's view of the session's control pubsub: one publisher, one subscriber, validated
 * messages dispatched to listeners. `ready()` publishes probes until one comes back, proving
 * both directions through the forwarder, so later messages are not lost to slow joining.
 * Messages of another session are dropped: an orphaned agent of a dead session may reconnect to
 * ports that our session now binds, and pilot and task uids repeat across sessions.
 */
export class ControlBus {
  /** Counts what this bus refuses and logs it at a bounded rate. */
  private readonly bad: BadMessages;
  private readonly pub: Publisher;
  private readonly sub: Subscriber;
  private readonly listeners = new Set<Listener>();
  /** What came before the first listener, when asked to hold it (`holdEarly`). */
  private early: ControlMessage[] | undefined;
  private readonly probes = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  private readonly loop: Promise<void>;

  private foreign = 0;

  constructor(
    addresses: { in: string; out: string },
    readonly session: string,
    private readonly log: Logger,
    /** An agent's keys: the client's control sockets are CURVE servers. */
    security?: ClientSecurity,
    /**
     * Holds what comes before the first listener for it (at most EARLY_MAX): a bus made early,
     * to link while its owner starts, loses nothing sent to it meanwhile.
     */
    holdEarly = false,
  ) {
    if (holdEarly) this.early = [];
    this.bad = new BadMessages(log);
    this.pub = new Publisher(addresses.in, security);
    this.sub = new Subscriber(addresses.out, security);
    this.loop = this.run();
  }

  on(listener: Listener): () => void {
    this.listeners.add(listener);
    const early = this.early ?? [];
    this.early = undefined;
    for (const msg of early) this.deliver(msg as Exclude<ControlMessage, { type: 'probe' }>);
    return () => this.listeners.delete(listener);
  }

  /**
   * Connects to the session's control sockets at `addresses` instead: an agent whose client
   * listens elsewhere now (same keys: the session's key did not change).
   */
  move(addresses: { in: string; out: string }): void {
    this.pub.move(addresses.in);
    this.sub.move(addresses.out);
  }

  publish(msg: OutgoingControl): Promise<void> {
    return this.pub.publish({ ...msg, session: this.session });
  }

  async ready(timeoutMs = 10_000): Promise<void> {
    const nonce = randomUUID();
    const seen = new Promise<void>((resolve, reject) =>
      this.probes.set(nonce, { resolve, reject }),
    );
    // a probe is lost until the subscription reached the forwarder: sent again, soon at
    // first (a start waits on this), then every PROBE_MAX_MS
    let gap = 1;
    let timer: NodeJS.Timeout | undefined;
    const send = (): void => {
      void this.pub.publish({ type: 'probe', from: 'self', nonce });
      timer = setTimeout(send, gap);
      gap = Math.min(gap * 2, PROBE_MAX_MS);
    };
    send();
    try {
      await withTimeout(seen, timeoutMs, 'control bus probe');
    } finally {
      clearTimeout(timer);
      this.probes.delete(nonce);
    }
  }

  /** Closes the sockets; a `ready()` still waiting rejects at once instead of at its timeout. */
  async close(): Promise<void> {
    for (const probe of this.probes.values()) probe.reject(new Error('control bus closed'));
    this.probes.clear();
    await this.pub.close();
    this.sub.close();
    await this.loop;
  }

  /**
   * Hands a checked message of this session to the listeners: what this bus receives, and
   * what the client's per-pilot uplinks receive (ControlUplinks).
   */
  deliver(msg: Exclude<ControlMessage, { type: 'probe' }>): void {
    if (this.early !== undefined) {
      // held for the first listener; past EARLY_MAX the oldest go (said in the log)
      if (this.early.push(msg) > EARLY_MAX) {
        const gone = this.early.shift()!;
        this.log.warn('control message dropped before a listener', { type: gone.type });
      }
      return;
    }
    for (const l of this.listeners) {
      try {
        l(msg);
      } catch (e) {
        this.log.error('control listener failed', { ...errorMeta(e), type: msg.type });
      }
    }
  }

  /** Publishes another peer's probe, so that it sees its own come back (ControlUplinks). */
  echo(probe: Extract<ControlMessage, { type: 'probe' }>): Promise<void> {
    return this.pub.publish(probe);
  }

  private async run(): Promise<void> {
    try {
      for await (const m of this.sub.messages()) {
        const msg = controlMessageOf(m, 'rejected', {}, (kind, meta) =>
          this.bad.report(kind, meta),
        );
        if (msg === undefined) continue;
        if (msg.type === 'probe') {
          this.probes.get(msg.nonce)?.resolve();
          continue;
        }
        if (msg.session !== this.session) {
          if (this.foreign++ % 1_000 === 0) {
            this.log.warn('control messages of another session dropped', {
              type: msg.type,
              session: msg.session,
              dropped: this.foreign,
            });
          }
          continue;
        }
        this.deliver(msg);
      }
    } catch (e) {
      this.log.error('control bus stopped', errorMeta(e));
    }
  }
}

/**
 * The control message in a received frame, or undefined after `refuse` was told why not
 * ("undecodable control message <verb>", "invalid control message <verb>", with `meta`).
 */
export function controlMessageOf(
  m: Decoded,
  verb: string,
  meta: Record<string, unknown>,
  refuse: (kind: string, meta: Record<string, unknown>) => void,
): ControlMessage | undefined {
  if (!m.ok) {
    refuse(`undecodable control message ${verb}`, { ...meta, ...errorMeta(m.error) });
    return undefined;
  }
  try {
    return parseControlMessage(m.value);
  } catch (e) {
    const issues = e instanceof ValidationError ? e.issues : [];
    refuse(`invalid control message ${verb}`, { ...meta, issues });
    return undefined;
  }
}
