import type { Notification } from '../../generated';
import { InternalError, UsageError } from '../../errors';
import type { WatchBulk } from '../state-store';

/** Bounds a bulk so that a watch from 0 over a long history does not copy it all at once. */
const MAX_BULK = 4096;
/** Chunks whose objects stay in memory, the newest ones (live watchers read those). */
const HOT_CHUNKS = 64;
/** Decoded cold chunks kept for readers going through old history (watch from 0, history). */
const DECODED_CACHE = 4;

/**
 * Records that chunks' encodings can be read back from when they are not held in memory, one
 * record per chunk (the embedded store: a segment file's records).
 */
export interface RecordSource {
  /** Record r's msgpack payload, checked; throws if it cannot be read back as it was written. */
  read(record: number): Buffer;
}

/** Entries of a column page: 64 KiB of f64, under glibc's default mmap threshold. */
const PAGE_BITS = 13;
const PAGE = 1 << PAGE_BITS;
const PAGE_MASK = PAGE - 1;

/**
 * A growable column of numbers in fixed-size typed-array pages: growing never copies more than
 * one page (the first grows by doubling up to a page; later ones are whole from the start), so
 * no multi-megabyte block is allocated, copied and freed as the feed grows.
 */
class Column<A extends Float64Array | Int32Array> {
  private readonly pages: A[] = [];

  constructor(private readonly make: (length: number) => A) {}

  get(i: number): number {
    return this.pages[i >>> PAGE_BITS]![i & PAGE_MASK]!;
  }

  /** Sets entry i; i may be one past the last entry set so far (an append). */
  set(i: number, value: number): void {
    const p = i >>> PAGE_BITS;
    let page = this.pages[p];
    if (page === undefined || (i & PAGE_MASK) >= page.length) {
      page = this.grown(p, page);
    }
    page[i & PAGE_MASK] = value;
  }

  private grown(p: number, page: A | undefined): A {
    const length = p === 0 ? Math.min(PAGE, Math.max(16, (page?.length ?? 0) * 2)) : PAGE;
    const next = this.make(length);
    if (page !== undefined) next.set(page);
    this.pages[p] = next;
    return next;
  }
}

/**
 * Accepted notifications in acceptance order, and the watch streams that follow them.
 * A backend pushes what it has made durable; watchers wake on push or end. A backend that has
 * the encoding at hand (`pushEncoded`, `pushStored`) lets old chunks drop their objects and
 * decode on demand.
 *
 * The feed is a sequence of chunks, one per push: a run of notifications. A chunk holds up to
 * three things: its msgpack encoding in memory (`payloads`: for the embedded store, a slice of
 * its tail segment read at open, or a copy of what an append encoded), where that encoding can
 * be read back from (a record of a `RecordSource`), and its objects (`items`), kept only while
 * the chunk is hot (the newest HOT_CHUNKS) or when there is no encoding: a session of 10 million
 * notifications as JS objects would not fit in a default Node heap. What every chunk has lies in
 * typed columns (about 16 bytes a chunk), not in an object per chunk.
 */
export class NotificationFeed {
  /** Number of chunks. */
  private chunks = 0;
  /** Feed position of each chunk's first notification; a chunk ends where the next starts. */
  private readonly starts = new Column((n) => new Float64Array(n));
  /** Per chunk, the number of its source in `sources`, or -1 when it has none. */
  private readonly sourceOf = new Column((n) => new Int32Array(n));
  /** Per chunk with a source, its record there. */
  private readonly recordOf = new Column((n) => new Int32Array(n));
  private readonly sources: RecordSource[] = [];
  private readonly sourceIds = new Map<RecordSource, number>();
  /** Encodings held in memory, by chunk. */
  private readonly payloads = new Map<number, Buffer>();
  /** Objects held, by chunk: hot chunks, and chunks that have no encoding. */
  private readonly items = new Map<number, readonly Notification[]>();
  private total = 0;
  /** Index of the oldest chunk that may still hold its objects as a hot chunk. */
  private hotFrom = 0;
  /** Decoded cold chunks, newest first. */
  private readonly cache: { chunk: number; items: readonly Notification[] }[] = [];
  private waiters = new Set<() => void>();
  private ended = false;

  /**
   * @param decodeChunk turns a chunk's payload back into its notifications; needed only when
   *   pushEncoded or pushStored is used. It must return exactly what was pushed (the payload
   *   was checked).
   */
  constructor(private readonly decodeChunk?: (payload: Buffer) => Notification[]) {}

  get length(): number {
    return this.total;
  }

  all(): Notification[] {
    return this.slice(0, this.total);
  }

  /** Notification at position `at` (0 <= at < length). */
  at(at: number): Notification {
    const c = this.find(at);
    return this.itemsOf(c)[at - this.starts.get(c)]!;
  }

  push(batch: readonly Notification[]): void {
    if (batch.length === 0) return;
    this.add(batch.length, -1, 0, undefined, batch.slice());
  }

  /**
   * Pushes notifications together with their encoding; `items` may be left out (open() of a
   * long session), and are then decoded from `payload` when read.
   */
  pushEncoded(payload: Buffer, count: number, items?: readonly Notification[]): void {
    if (this.decodeChunk === undefined) throw new UsageError('pushEncoded needs a decodeChunk');
    this.add(count, -1, 0, payload, items);
  }

  /**
   * Pushes notifications by where their encoding lies: `record` of `source`; `items`, when
   * given, are kept while the chunk is hot, else they are read and decoded when first needed.
   */
  pushStored(
    source: RecordSource,
    record: number,
    count: number,
    items?: readonly Notification[],
  ): void {
    if (this.decodeChunk === undefined) throw new UsageError('pushStored needs a decodeChunk');
    this.add(count, this.idOf(source), record, undefined, items);
  }

  /**
   * From the chunk starting at position `from` on, one chunk per entry of `counts`: the chunks'
   * payloads now lie in records `firstRecord`, `firstRecord + 1`, ... of `source` (a sealed
   * segment's) and their in-memory copies go. `counts` are checked against the chunks'.
   */
  moveToStored(
    from: number,
    source: RecordSource,
    firstRecord: number,
    counts: ArrayLike<number>,
  ): void {
    const k = counts.length;
    if (k === 0) return;
    const first = this.chunks === 0 ? 0 : this.find(from);
    if (this.chunks === 0 || this.starts.get(first) !== from || first + k > this.chunks) {
      throw new InternalError('feed-move-range');
    }
    for (let j = 0; j < k; j++) {
      if (this.countOf(first + j) !== counts[j]) throw new InternalError('feed-move-count');
    }
    const id = this.idOf(source);
    for (let j = 0; j < k; j++) {
      const c = first + j;
      if (this.sourceOf.get(c) < 0) {
        // An append may have stored it already.
        this.sourceOf.set(c, id);
        this.recordOf.set(c, firstRecord + j);
      }
      this.payloads.delete(c);
      if (c < this.hotFrom) this.items.delete(c);
    }
  }

  private idOf(source: RecordSource): number {
    let id = this.sourceIds.get(source);
    if (id === undefined) {
      id = this.sources.length;
      this.sources.push(source);
      this.sourceIds.set(source, id);
    }
    return id;
  }

  private add(
    count: number,
    source: number,
    record: number,
    payload: Buffer | undefined,
    items: readonly Notification[] | undefined,
  ): void {
    if (count === 0) return;
    const c = this.chunks++;
    this.starts.set(c, this.total);
    this.sourceOf.set(c, source);
    this.recordOf.set(c, record);
    if (payload !== undefined) this.payloads.set(c, payload);
    if (items !== undefined) this.items.set(c, items);
    this.total += count;
    // Objects of chunks that fell out of the hot window go; their encoding stays.
    while (this.chunks - this.hotFrom > HOT_CHUNKS) {
      const old = this.hotFrom++;
      if (this.sourceOf.get(old) >= 0 || this.payloads.has(old)) this.items.delete(old);
    }
    this.wakeAll();
  }

  /** Notifications in chunk c. */
  private countOf(c: number): number {
    return (c + 1 < this.chunks ? this.starts.get(c + 1) : this.total) - this.starts.get(c);
  }

  private slice(from: number, to: number): Notification[] {
    const out: Notification[] = [];
    if (from >= to) return out;
    for (let c = this.find(from); c < this.chunks; c++) {
      const start = this.starts.get(c);
      if (start >= to) break;
      const items = this.itemsOf(c);
      const end = Math.min(to, start + this.countOf(c)) - start;
      for (let j = Math.max(from - start, 0); j < end; j++) out.push(items[j]!);
    }
    return out;
  }

  /** Index of the chunk holding position `at` (0 when the feed is empty). */
  private find(at: number): number {
    let lo = 0;
    let hi = this.chunks - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.starts.get(mid) <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private itemsOf(c: number): readonly Notification[] {
    const own = this.items.get(c);
    if (own !== undefined) return own;
    const hit = this.cache.find((e) => e.chunk === c);
    if (hit !== undefined) return hit.items;
    const items = this.decodeChunk!(this.bytesOf(c));
    this.cache.unshift({ chunk: c, items });
    if (this.cache.length > DECODED_CACHE) this.cache.pop();
    return items;
  }

  private bytesOf(c: number): Buffer {
    const payload = this.payloads.get(c);
    if (payload !== undefined) return payload;
    const source = this.sourceOf.get(c);
    if (source < 0) throw new InternalError('feed-chunk-bytes');
    return this.sources[source]!.read(this.recordOf.get(c));
  }

  /** Ends every watch once it has delivered what was accepted so far. */
  end(): void {
    this.ended = true;
    this.wakeAll();
  }

  /**
   * A hand-written iterator rather than an async generator: a generator's return() waits
   * behind a pending next(), so a consumer could not stop a watch that waits for news.
   */
  watch(fromCursor = 0): AsyncIterableIterator<WatchBulk> {
    if (!Number.isSafeInteger(fromCursor) || fromCursor < 0) {
      throw new UsageError(`watch: fromCursor must be an integer >= 0, got ${fromCursor}`);
    }
    let cursor = fromCursor;
    let stopped = false;
    const mine = new Set<() => void>();
    const done: IteratorReturnResult<undefined> = { done: true, value: undefined };
    const iterator: AsyncIterableIterator<WatchBulk> = {
      next: async (): Promise<IteratorResult<WatchBulk>> => {
        for (;;) {
          if (stopped) return done;
          if (cursor < this.total) {
            const notifications = this.slice(cursor, Math.min(cursor + MAX_BULK, this.total));
            const value = { cursor, notifications };
            cursor += notifications.length;
            return { done: false, value };
          }
          if (this.ended) return done;
          await new Promise<void>((resolve) => {
            const wake = (): void => {
              mine.delete(wake);
              resolve();
            };
            mine.add(wake);
            this.waiters.add(wake);
          });
        }
      },
      return: (): Promise<IteratorResult<WatchBulk>> => {
        stopped = true;
        for (const wake of [...mine]) {
          this.waiters.delete(wake);
          wake();
        }
        return Promise.resolve(done);
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  private wakeAll(): void {
    const waiters = this.waiters;
    this.waiters = new Set();
    for (const wake of waiters) wake();
  }
}
