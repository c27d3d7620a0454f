import type { Clock, Timer } from '../lib/clock';

/**
 * The router core's one timer, at its next deadline (a queue timeout, an idle TTL, a drain
 * grace, a handoff). A timer already armed for an earlier time is kept: it fires, the core
 * looks and arms again. So the requests that move a deadline later (each one used a replica
 * now) arm no timer of their own.
 */
export class DeadlineTimer {
  private timer: Timer | undefined;
  private at = Infinity;

  constructor(
    private readonly clock: Clock,
    private readonly fire: () => void,
  ) {}

  /** Fires at `next` (epoch ms), or earlier. */
  arm(next: number, now: number): void {
    if (next >= this.at) return;
    this.timer?.cancel();
    this.at = next;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.at = Infinity;
        this.fire();
      },
      Math.max(0, next - now),
    );
  }

  cancel(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.at = Infinity;
  }
}
