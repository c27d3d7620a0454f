import type { Clock, Timer } from '../lib/clock';

/**
 * Gives the client's free C heap back to the kernel once the session has gone quiet.
 *
 * A busy client frees most of what it allocates outside V8 (received ZeroMQ messages, pack
 * buffers, segment reads) in an order glibc cannot give back by itself: measured at 100,000
 * tasks, ~60 MB of the client's resident memory was free glibc heap (docs/performance.md).
 * malloc_trim(0) returns those pages; it walks every free block (a few milliseconds for a
 * 100 MB heap), so it runs once per quiet spell, never on the hot path: after `quietMs`
 * without activity, and again only after new activity.
 */
export class MemoryTrimmer {
  private last = 0;
  private pending = false;
  private timer: Timer | undefined;
  private closed = false;

  constructor(
    private readonly trim: () => void,
    private readonly clock: Clock,
    private readonly quietMs = 1_000,
  ) {}

  /** Notes work (a bulk of notifications delivered): a trim follows once it is quiet. */
  activity(): void {
    if (this.closed) return;
    this.last = this.clock.now();
    this.pending = true;
    this.timer ??= this.clock.setTimeout(() => this.due(), this.quietMs);
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  private due(): void {
    this.timer = undefined;
    if (!this.pending || this.closed) return;
    const quiet = this.clock.now() - this.last;
    if (quiet < this.quietMs) {
      this.timer = this.clock.setTimeout(() => this.due(), this.quietMs - quiet);
      return;
    }
    this.pending = false;
    this.trim();
  }
}
