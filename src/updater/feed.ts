import type { Notification } from '../generated';
import { InternalError, UsageError } from '../errors';
import type { WatchBulk } from './state-store';

/** Bounds a bulk so that a watch from 0 over a long history does not copy it all at once. */
const MAX_BULK = 4096;
/** Chunks whose objects stay in memory, the newest ones (live watchers read those). */
const HOT_CHUNKS = 64;
/** Decoded cold chunks kept for readers going through old history (watch from 0, history). */
const DECODED_CACHE = 4;

/** Where a chunk's encoding can be read back from when it is not held in memory. */
export interface PayloadSource {
  /** The msgpack payload, checked; throws if it cannot be read back as it was written. */
  read(): Buffer;
}

/**
 * A run of accepted notifications. `payload` is their msgpack encoding (for the embedded store,
 * a slice of its tail segment, or what an append encoded); `stored` says where to read that
 * encoding back when it is not in memory (a record of a sealed segment); `items` the objects,
 * kept only while the chunk is hot or cached: a session of 10 million notifications as JS
 * objects would not fit in a default Node heap.
 */
interface Chunk {
  start: number;
  count: number;
  payload: Buffer | undefined;
  stored: PayloadSource | undefined;
  items: readonly Notification[] | undefined;
}

/**
 * Accepted notifications in acceptance order, and the watch streams that follow them.
 * A backend pushes what it has made durable; watchers wake on push or end. A backend that has
 * the encoding at hand (`pushEncoded`) lets old chunks drop their objects and decode on demand.
 */
export class NotificationFeed {
  private readonly chunks: Chunk[] = [];
  private total = 0;
  /** Index of the oldest chunk that may still hold its objects as a hot chunk. */
  private hotFrom = 0;
  private readonly cache: Chunk[] = [];
  private waiters = new Set<() => void>();
  private ended = false;

  /**
   * @param decodeChunk turns a chunk's payload back into its notifications; needed only when
   *   pushEncoded is used. It must return exactly what was pushed (the payload was checked).
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
    const chunk = this.chunks[this.find(at)]!;
    return this.itemsOf(chunk)[at - chunk.start]!;
  }

  push(batch: readonly Notification[]): void {
    this.add({
      start: this.total,
      count: batch.length,
      payload: undefined,
      stored: undefined,
      items: batch.slice(),
    });
  }

  /**
   * Pushes notifications together with their encoding; `items` may be left out (open() of a
   * long session), and are then decoded from `payload` when read.
   */
  pushEncoded(payload: Buffer, count: number, items?: readonly Notification[]): void {
    if (this.decodeChunk === undefined) throw new UsageError('pushEncoded needs a decodeChunk');
    this.add({ start: this.total, count, payload, stored: undefined, items });
  }

  /**
   * Pushes notifications by where their encoding lies; `items`, when given, are kept while the
   * chunk is hot, else they are read and decoded when first needed.
   */
  pushStored(stored: PayloadSource, count: number, items?: readonly Notification[]): void {
    if (this.decodeChunk === undefined) throw new UsageError('pushStored needs a decodeChunk');
    this.add({ start: this.total, count, payload: undefined, stored, items });
  }

  /**
   * From the chunk starting at position `from` on, one chunk per source: the chunks' payloads
   * now lie in `sources` and their in-memory copies go (a sealed segment's records).
   * Each source must describe exactly its chunk; `counts` are checked against the chunks'.
   */
  moveToStored(from: number, sources: readonly PayloadSource[], counts: readonly number[]): void {
    if (sources.length === 0) return;
    let i = this.find(from);
    if (this.chunks[i]?.start !== from || i + sources.length > this.chunks.length) {
      throw new InternalError('feed-move-range');
    }
    for (let k = 0; k < sources.length; k++, i++) {
      if (this.chunks[i]!.count !== counts[k]) throw new InternalError('feed-move-count');
    }
    i -= sources.length;
    for (let k = 0; k < sources.length; k++, i++) {
      const chunk = this.chunks[i]!;
      chunk.stored ??= sources[k]; // an append may have stored it already
      chunk.payload = undefined;
      if (i < this.hotFrom) chunk.items = undefined;
    }
  }

  private add(chunk: Chunk): void {
    if (chunk.count === 0) return;
    this.chunks.push(chunk);
    this.total += chunk.count;
    // Objects of chunks that fell out of the hot window go; their payload stays.
    while (this.chunks.length - this.hotFrom > HOT_CHUNKS) {
      const old = this.chunks[this.hotFrom++]!;
      if (old.payload !== undefined || old.stored !== undefined) old.items = undefined;
    }
    this.wakeAll();
  }

  private slice(from: number, to: number): Notification[] {
    const out: Notification[] = [];
    if (from >= to) return out;
    for (let i = this.find(from); i < this.chunks.length; i++) {
      const chunk = this.chunks[i]!;
      if (chunk.start >= to) break;
      const items = this.itemsOf(chunk);
      const end = Math.min(to, chunk.start + chunk.count) - chunk.start;
      for (let j = Math.max(from - chunk.start, 0); j < end; j++) out.push(items[j]!);
    }
    return out;
  }

  /** Index of the chunk holding position `at`. */
  private find(at: number): number {
    let lo = 0;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.chunks[mid]!.start <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private itemsOf(chunk: Chunk): readonly Notification[] {
    if (chunk.items !== undefined) return chunk.items;
    const hit = this.cache.find((c) => c.start === chunk.start);
    const items = hit?.items ?? this.decodeChunk!(chunk.payload ?? chunk.stored!.read());
    if (hit === undefined) {
      // A cache entry is a copy that holds the objects; the chunk itself stays lean.
      this.cache.unshift({ ...chunk, items });
      if (this.cache.length > DECODED_CACHE) this.cache.pop();
    }
    return items;
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
