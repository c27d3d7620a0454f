import { errorMeta } from '../errors';
import type { Logger } from '../lib/logger';
import type { Notification } from '../states/notification';
import type { WatchBulk } from '../updater/state-store';

/** One server-sent event per notification: its id is its position in the store (1, 2, ...). */
export function eventText(id: number, n: Notification): string {
  return `id: ${id}\nevent: ${n.kind}\ndata: ${JSON.stringify(n)}\n\n`;
}

/** What the feed follows: the session's store. */
export interface WatchSource {
  watch(fromCursor?: number): AsyncIterable<WatchBulk>;
}

/** How much rendered text the feed keeps for streams that are a little behind. */
export interface FeedLimits {
  events: number;
  chars: number;
  /** The most text one read hands a stream (a stream far behind gets it in several). */
  readChars: number;
}

const LIMITS: FeedLimits = { events: 100_000, chars: 16 << 20, readChars: 1 << 20 };

/** A bulk of the store as the text of its events; `starts[i]`: where event i's text begins. */
interface Chunk {
  /** Store positions before its first event (its events are cursor + 1 ...). */
  cursor: number;
  /** The position of its last event. */
  end: number;
  text: string;
  starts: Uint32Array;
}

/**
 * The session's events rendered once for every event stream. One watch of the store turns each
 * bulk into the text of its server-sent events; each stream at (or near) the live tail is
 * handed that same text, so a hundred streams cost one rendering and a hundred socket writes.
 * A stream that starts further back, or falls out of what the feed keeps, reads the store
 * with a watch of its own until it is within the feed again: never a gap, never a repeat.
 */
export class EventFeed {
  private readonly chunks: Chunk[] = [];
  private head = 0;
  private chars = 0;
  /** Everything after this position is held (or still to come); undefined: not started. */
  private floor: number | undefined;
  private waiters: (() => void)[] = [];
  private ended = false;
  private iterator: AsyncIterator<WatchBulk> | undefined;

  constructor(
    private readonly store: WatchSource,
    private readonly log: Logger,
    private readonly limits: FeedLimits = LIMITS,
  ) {}

  /** Follows the store from `mark` (its size now): earlier events are read by the streams. */
  start(mark: number): void {
    if (this.floor !== undefined || this.ended) return;
    this.floor = mark;
    const it = this.store.watch(mark)[Symbol.asyncIterator]();
    this.iterator = it;
    void (async () => {
      try {
        for (;;) {
          const r = await it.next();
          if (r.done === true) break;
          this.add(r.value);
        }
      } catch (e) {
        this.log.error('event feed: store watch stopped', errorMeta(e));
      } finally {
        this.ended = true;
        this.wake();
      }
    })();
  }

  /** The store position of the latest event the feed holds (0 before any). */
  latest(): number {
    const last = this.chunks[this.chunks.length - 1];
    return last !== undefined ? last.end : (this.floor ?? 0);
  }

  /** Ends the feed's watch; streams read what it holds, then end. */
  async close(): Promise<void> {
    this.ended = true;
    this.wake();
    await this.iterator?.return?.();
  }

  /**
   * The text of every event after store position `from`, in store order, as it comes, until
   * the store closes or `signal` aborts.
   */
  async *stream(from: number, signal: AbortSignal): AsyncGenerator<string> {
    let pos = from;
    while (!signal.aborted) {
      if (!this.covers(pos)) {
        const reached = yield* this.replay(pos, signal);
        if (reached === undefined) return;
        pos = reached;
        continue;
      }
      const got = this.read(pos);
      if (got !== undefined) {
        pos = got.pos;
        yield got.text;
      } else if (this.ended) return;
      else await this.next(signal);
    }
  }

  private covers(pos: number): boolean {
    return this.floor !== undefined && pos >= this.floor;
  }

  /**
   * From the store itself, until `pos` is one the feed covers: the position reached, or
   * undefined once the store's watch ended or the stream was aborted.
   */
  private async *replay(
    pos: number,
    signal: AbortSignal,
  ): AsyncGenerator<string, number | undefined> {
    const it = this.store.watch(pos)[Symbol.asyncIterator]();
    const stop = (): void => void it.return?.();
    signal.addEventListener('abort', stop, { once: true });
    try {
      for (;;) {
        const r = await it.next();
        if (r.done === true || signal.aborted) return undefined;
        const { cursor, notifications } = r.value;
        let text = '';
        notifications.forEach((n, i) => (text += eventText(cursor + i + 1, n)));
        pos = cursor + notifications.length;
        yield text;
        if (this.covers(pos)) return pos;
      }
    } finally {
      signal.removeEventListener('abort', stop);
      await it.return?.();
    }
  }

  private add(bulk: WatchBulk): void {
    const { cursor, notifications } = bulk;
    if (notifications.length === 0) return;
    const starts = new Uint32Array(notifications.length);
    let text = '';
    notifications.forEach((n, i) => {
      starts[i] = text.length;
      text += eventText(cursor + i + 1, n);
    });
    this.chunks.push({ cursor, end: cursor + notifications.length, text, starts });
    this.chars += text.length;
    this.trim();
    this.wake();
  }

  /** Drops the oldest chunks beyond the limits; a stream behind them reads the store. */
  private trim(): void {
    const held = (): number => this.chunks[this.chunks.length - 1]!.end - this.floor!;
    while (
      this.chunks.length - this.head > 1 &&
      (this.chars > this.limits.chars || held() > this.limits.events)
    ) {
      const old = this.chunks[this.head++]!;
      this.chars -= old.text.length;
      this.floor = old.end;
    }
    if (this.head > 1_024 && this.head * 2 > this.chunks.length) {
      this.chunks.splice(0, this.head);
      this.head = 0;
    }
  }

  /** The text after `pos` the feed holds now (up to readChars, whole chunks but the first). */
  private read(pos: number): { text: string; pos: number } | undefined {
    let i = this.firstAfter(pos);
    if (i === this.chunks.length) return undefined;
    const first = this.chunks[i]!;
    let text =
      pos <= first.cursor ? first.text : first.text.slice(first.starts[pos - first.cursor]);
    let reached = first.end;
    for (i++; i < this.chunks.length && text.length < this.limits.readChars; i++) {
      text += this.chunks[i]!.text;
      reached = this.chunks[i]!.end;
    }
    return { text, pos: reached };
  }

  /** The index of the first chunk held that ends after `pos` (binary search: ends ascend). */
  private firstAfter(pos: number): number {
    let lo = this.head;
    let hi = this.chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.chunks[mid]!.end > pos) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  private next(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.push(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w();
  }
}
