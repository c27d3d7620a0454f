import type { Clock, Timer } from '../../lib/clock';

/** What the trimmer calls: src/lib/native-memory.ts in a session. */
export interface MemoryRelease {
  /** Gives the C heap's free pages back to the kernel (cheap: a walk of the free blocks). */
  trim(): void;
  /** A memory-reducing full GC of V8's heap (a pause of a full GC). */
  reduceHeap(): void;
}

/** Time between a heap reduction and the trim that gives back what it freed. */
const SETTLE_MS = 100;

export interface MemoryTrimmerOptions {
  /** Quiet time after the last activity before memory is given back. */
  quietMs?: number;
  /** Work (notifications delivered) since the last heap reduction that warrants another. */
  heapReduceAfter?: number;
}

/**
 * Gives the client's memory back once the session has gone quiet.
 *
 * A busy client grows two pools that it never gives back by itself (measured at 100,000 tasks,
 * docs/performance.md): free glibc heap (~60 MB: received ZeroMQ messages, pack buffers and
 * segment reads, freed in an order glibc cannot return) and V8's young generation (grown to
 * 32 MB by the Task objects that pass through it). After `quietMs` without activity the
 * trimmer trims the C heap, and, when at least `heapReduceAfter` notifications were delivered
 * since the last time, first has V8 reduce its heap (then trims SETTLE_MS later, once V8's
 * background thread has freed what the GC collected): that is a full-GC pause, so a trickle of
 * work never pays for it more than once per big burst. It runs again only after new activity.
 */
export class MemoryTrimmer {
  private last = 0;
  private pending = false;
  private work = 0;
  private timer: Timer | undefined;
  private closed = false;
  private readonly quietMs: number;
  private readonly heapReduceAfter: number;

  constructor(
    private readonly release: MemoryRelease,
    private readonly clock: Clock,
    opts: MemoryTrimmerOptions = {},
  ) {
    this.quietMs = opts.quietMs ?? 1_000;
    this.heapReduceAfter = opts.heapReduceAfter ?? 100_000;
  }

  /** Notes work (`count` notifications delivered): memory is given back once it is quiet. */
  activity(count: number): void {
    if (this.closed) return;
    this.last = this.clock.now();
    this.pending = true;
    this.work += count;
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
    if (this.work >= this.heapReduceAfter) {
      this.work = 0;
      this.release.reduceHeap();
      // V8 frees the collected buffers' memory on a background thread: trim once that is done
      this.timer = this.clock.setTimeout(() => this.settled(), SETTLE_MS);
      return;
    }
    this.release.trim();
  }

  private settled(): void {
    this.timer = undefined;
    if (this.closed) return;
    this.release.trim();
    if (this.pending) this.timer = this.clock.setTimeout(() => this.due(), this.quietMs);
  }
}
