import type { Clock, Timer } from '../../../lib/clock';

/** How a ready service is probed: every intervalMs, unhealthy after `failures` misses in a row. */
export interface LivenessPolicy {
  intervalMs: number;
  failures: number;
}

/**
 * The liveness decision, pure: counts the probes a ready service missed in a row (an answer
 * resets it) and says when it has missed enough to be unhealthy.
 */
export class MissCount {
  private misses = 0;

  constructor(private readonly failures: number) {}

  /** A probe's result: 'unhealthy' once `failures` probes in a row were missed. */
  onProbe(ok: boolean): 'healthy' | 'missed' | 'unhealthy' {
    if (ok) {
      this.misses = 0;
      return 'healthy';
    }
    return ++this.misses >= this.failures ? 'unhealthy' : 'missed';
  }

  get inARow(): number {
    return this.misses;
  }
}

/**
 * Probes a ready service on the clock: one probe at a time, the next `intervalMs` after the
 * last one ended (a slow answer never piles probes up), until it is unhealthy or stopped.
 * The probe is the caller's (a TCP connect or HTTP GET with its own timeout); the timing is
 * here, on an injected clock.
 */
export class LivenessWatch {
  private readonly count: MissCount;
  private timer: Timer | undefined;
  private stopped = false;

  constructor(
    private readonly policy: LivenessPolicy,
    private readonly clock: Clock,
    private readonly probe: () => Promise<boolean>,
    /** Called once, with the misses in a row, when the service is unhealthy. */
    private readonly unhealthy: (misses: number) => void,
  ) {
    this.count = new MissCount(policy.failures);
    this.next();
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  private next(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(() => void this.round(), this.policy.intervalMs);
  }

  private async round(): Promise<void> {
    if (this.stopped) return;
    const ok = await this.probe().catch(() => false);
    if (this.stopped) return;
    if (this.count.onProbe(ok) !== 'unhealthy') return this.next();
    this.stopped = true;
    this.unhealthy(this.count.inARow);
  }
}
