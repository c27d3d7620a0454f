import type { PilotLiveness, SilentPart } from '../../generated';
import type { Clock, Timer } from '../../lib/clock';

/**
 * How often an agent says it is alive: the agent's AGENT_HEARTBEAT_MS (src/agent/lifecycle/
 * core.ts), said again here because the client does not import the agent's code.
 */
export const HEARTBEAT_MS = 1_000;
/** Heartbeats missed before an active pilot's agent counts as silent (PyLet's UNKNOWN). */
export const UNKNOWN_AFTER_BEATS = 3;
/** A watchdog this late ran in a stalled client: it looks again before judging the agent. */
export const STALL_MS = 1_000;

/**
 * After how much silence an agent that is lost after `limitMs` shows as unknown: 3 heartbeat
 * periods, or half the limit where that is shorter, so that unknown always comes before lost.
 */
export function unknownAfterMs(limitMs: number): number {
  return Math.min(UNKNOWN_AFTER_BEATS * HEARTBEAT_MS, limitMs / 2);
}

/** What a SilenceWatch tells its owner (the PilotLauncher's core). */
export interface SilenceEvents {
  /** The pilot's liveness changed: its agent went silent, was heard again, or its parts' list. */
  changed(liveness: PilotLiveness): void;
  /** Silent for the whole limit, judged from the heartbeats read: the pilot is lost. */
  lost(silentMs: number, limitMs: number): void;
}

/**
 * The silence of one pilot's agent, from its heartbeats: `unknown` once it has been silent for
 * unknownAfterMs while its pilot is active (watchActive), `ok` again when heard, lost after
 * `limitMs` (active or not: an agent stopped before it reported in is lost too). Since when it is
 * silent is when it was last heard. Pure: time and timers come from the Clock. A heartbeat only
 * notes the time; each watchdog, when it fires, re-arms for what is left, and one that fires late
 * (this client was stalled, the heartbeats that came meanwhile still unread) looks again after
 * STALL_MS before it judges.
 */
export class SilenceWatch {
  private lastHeard: number;
  private lostTimer: Timer | undefined;
  private unknownTimer: Timer | undefined;
  private active = false;
  private unknown = false;
  private parts: SilentPart[] = [];

  constructor(
    private readonly clock: Clock,
    /** How long the agent may be silent before its pilot is lost. */
    readonly limitMs: number,
    private readonly events: SilenceEvents,
  ) {
    this.lastHeard = clock.now();
    this.armLost(limitMs);
  }

  /**
   * The agent was heard. `parts`: the parts its heartbeat says are silent (a heartbeat without
   * any: `[]`); undefined (another message than a heartbeat): as they were.
   */
  heard(parts?: readonly SilentPart[]): void {
    this.lastHeard = this.clock.now();
    let changed = false;
    if (parts !== undefined && !sameParts(parts, this.parts)) {
      this.parts = parts.map((p) => ({ part: p.part, since: p.since }));
      changed = true;
    }
    if (this.unknown) {
      this.unknown = false;
      changed = true;
      this.armUnknown(unknownAfterMs(this.limitMs));
    }
    if (changed) this.events.changed(this.liveness);
  }

  /** Its pilot is active (its agent reported in): its silence shows from now on. */
  watchActive(): void {
    if (this.active) return;
    this.active = true;
    const silent = this.clock.now() - this.lastHeard;
    this.armUnknown(Math.max(0, unknownAfterMs(this.limitMs) - silent));
  }

  /** The pilot ended: nothing more to watch. */
  stop(): void {
    this.lostTimer?.cancel();
    this.unknownTimer?.cancel();
    this.lostTimer = this.unknownTimer = undefined;
  }

  get liveness(): PilotLiveness {
    return {
      state: this.unknown ? 'unknown' : 'ok',
      ...(this.unknown ? { since: this.lastHeard } : {}),
      silentParts: this.parts.map((p) => ({ ...p })),
    };
  }

  private armUnknown(ms: number, recheck = false): void {
    const due = this.clock.now() + ms;
    this.unknownTimer = this.clock.setTimeout(() => {
      const after = unknownAfterMs(this.limitMs);
      const now = this.clock.now();
      const silent = now - this.lastHeard;
      if (silent < after) return this.armUnknown(after - silent);
      if (!recheck && now - due > STALL_MS) return this.armUnknown(STALL_MS, true);
      // heard again, it is armed anew (heard)
      this.unknownTimer = undefined;
      this.unknown = true;
      this.events.changed(this.liveness);
    }, ms);
  }

  private armLost(ms: number, recheck = false): void {
    const due = this.clock.now() + ms;
    this.lostTimer = this.clock.setTimeout(() => {
      const now = this.clock.now();
      const silent = now - this.lastHeard;
      if (silent < this.limitMs) return this.armLost(this.limitMs - silent);
      if (!recheck && now - due > STALL_MS) return this.armLost(STALL_MS, true);
      this.stop();
      this.events.lost(silent, this.limitMs);
    }, ms);
  }
}

function sameParts(a: readonly SilentPart[], b: readonly SilentPart[]): boolean {
  return (
    a.length === b.length && a.every((p, i) => p.part === b[i]!.part && p.since === b[i]!.since)
  );
}
