import type { Notification } from '../generated';
import { UsageError } from '../errors';
import type { WatchBulk } from './state-store';

/** Bounds a bulk so that a watch from 0 over a long history does not copy it all at once. */
const MAX_BULK = 4096;

/**
 * Accepted notifications in acceptance order, and the watch streams that follow them.
 * A backend pushes what it has made durable; watchers wake on push or end.
 */
export class NotificationFeed {
  private readonly items: Notification[] = [];
  private waiters = new Set<() => void>();
  private ended = false;

  get length(): number {
    return this.items.length;
  }

  all(): Notification[] {
    return this.items.slice();
  }

  push(batch: readonly Notification[]): void {
    for (const n of batch) this.items.push(n);
    this.wakeAll();
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
          if (cursor < this.items.length) {
            const notifications = this.items.slice(cursor, cursor + MAX_BULK);
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
