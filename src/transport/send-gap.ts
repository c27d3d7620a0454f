import { systemClock, type Clock, type Timer } from '../lib/clock';

/** The gap between the messages of a busy queue that carries tasks between processes. */
export const BUSY_GAP_MS = 2;

/** The longest that gap grows to while bulks keep gathering (see SendGap). */
export const MAX_BUSY_GAP_MS = 10;

/**
 * Spaces a producer's messages at least a gap apart while it is busy, gathering the items of
 * bulks sent meanwhile into the next message. On this kind of machine each message costs its
 * sender and receiver a thread wake-up (tens of microseconds in a virtual machine), and on a
 * steady trickle (a task handed back as each one ends) that, not the work, bounds the rate. A
 * bulk sent after a quiet spell of a gap, or while the producer has nothing else under way
 * (`busy`), goes at once: a lone task, or a chain of round trips, waits for nothing.
 *
 * The gap starts at `gapMs` and doubles, up to `maxGapMs`, each time a held message carried
 * several items but fewer than ENOUGH_ITEMS (a trickle is gathering: measured on 2 cores, a
 * 10 ms gap halves the client's CPU per `/bin/true` task against 2 ms); it halves after one
 * that carried ENOUGH_ITEMS or more (a fast stream needs no longer wait, and waits would bound a
 * pipeline with little in flight, such as function calls), and a message of one item, or one
 * after a quiet spell, sets it back.
 */
export class SendGap {
  private items: unknown[] = [];
  private waiters: { resolve(): void; reject(e: unknown): void }[] = [];
  private timer: Timer | undefined;
  private last = -Infinity;
  private gap: number;
  private readonly maxGapMs: number;
  private readonly clock: Clock;
  private readonly busy: (sending: number) => boolean;

  constructor(
    private readonly gapMs: number,
    private readonly sendNow: (items: unknown[]) => Promise<void>,
    opts: {
      maxGapMs?: number;
      clock?: Clock;
      /**
       * Whether more is on its way besides the `sending` items (the producer holds other work):
       * a bulk is held only then. Without it, one task that waits for the one before (a chain
       * of round trips) would wait a gap each time.
       */
      busy?: (sending: number) => boolean;
    } = {},
  ) {
    this.gap = gapMs;
    this.maxGapMs = Math.max(gapMs, opts.maxGapMs ?? gapMs);
    this.clock = opts.clock ?? monotonicClock;
    this.busy = opts.busy ?? (() => true);
  }

  /** The gap now (for tests and figures). */
  get currentGapMs(): number {
    return this.gap;
  }

  send(items: readonly unknown[]): Promise<void> {
    const now = this.clock.now();
    if (this.timer === undefined && (now - this.last >= this.gap || !this.busy(items.length))) {
      this.last = now;
      this.gap = this.gapMs;
      return this.sendNow(items as unknown[]);
    }
    for (const x of items) this.items.push(x);
    // a failure reaches the sends it carried (their waiters), not the timer
    this.timer ??= this.clock.setTimeout(
      () => void this.flush(true).catch(() => undefined),
      this.last + this.gap - now,
    );
    return new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Sends what is gathered now (before a close; `held`: its gap has passed). */
  flush(held = false): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    if (this.items.length === 0) return Promise.resolve();
    const items = this.items;
    const waiters = this.waiters;
    this.items = [];
    this.waiters = [];
    this.last = this.clock.now();
    if (held) this.gap = nextGap(this.gap, items.length, this.gapMs, this.maxGapMs);
    const sent = this.sendNow(items);
    sent.then(
      () => waiters.forEach((w) => w.resolve()),
      (e: unknown) => waiters.forEach((w) => w.reject(e)),
    );
    return sent;
  }

  /** Drops what is gathered (a discarded queue): its sends resolve, as a dropped send does. */
  drop(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.items = [];
    for (const w of this.waiters.splice(0)) w.resolve();
  }
}

/** Items of one held message that make a longer gap pointless (see SendGap). */
export const ENOUGH_ITEMS = 32;

/** The gap after a held message of `items`. */
function nextGap(gap: number, items: number, least: number, most: number): number {
  if (items <= 1) return least;
  return items < ENOUGH_ITEMS ? Math.min(most, 2 * gap) : Math.max(least, gap / 2);
}

/** Milliseconds that never jump with the wall clock, and Node's timers. */
const monotonicClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => systemClock.setTimeout(fn, ms),
};
