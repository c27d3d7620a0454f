import type { Notification } from '../../generated';
import { coerceError, UsageError } from '../../errors';
import { deferred, type Deferred } from '../../lib/deferred';
import type { Logger } from '../../lib/logger';
import type { StoreUnwritableError } from '../state-store';
import { encodeNotifications } from '../notification-codec';
import type { NotificationFeed } from './feed';
import { frameRecord } from './record';
import type { RecordTable } from './segments';
import type { SegmentWriter } from './segment-writer';
import type { Claimed, StoreKeys } from './store-keys';
import type { WriteRetry } from './write-retry';

interface PendingAppend {
  batch: readonly Notification[];
  done: Deferred<number>;
}

type Outcome = 'written' | 'settled' | 'held';

/**
 * The embedded store's appends: whatever queues up during one write+fsync goes into the next
 * single record (group commit). Each append resolves once its record is durable, with its count
 * of new notifications. While the file cannot be written (WriteRetry), appends are held, up to
 * `maxHeld` notifications, and tried again; at close what still cannot be written is given up
 * and counted (`lost`).
 */
export class GroupCommit {
  private queue: PendingAppend[] = [];
  /** Notifications in the queue and in the group being committed. */
  private queued = 0;
  private flushing: Promise<void> | undefined;
  private closing = false;
  /** Notifications given up at close because the file could still not be written. */
  private lostCount = 0;

  constructor(
    private readonly keys: StoreKeys,
    private readonly feed: NotificationFeed,
    private readonly segments: SegmentWriter,
    private readonly retry: WriteRetry,
    private readonly maxHeld: number,
    private readonly logger: Logger,
  ) {}

  /** The condition while the file cannot be written; undefined while it writes. */
  get unwritable(): StoreUnwritableError | undefined {
    return this.retry.error(this.queued);
  }

  get lost(): number {
    return this.lostCount;
  }

  append(batch: Notification[]): Promise<number> {
    if (this.closing) return Promise.reject(new UsageError('append on a closed store'));
    if (this.retry.failing && this.queued + batch.length > this.maxHeld) {
      return Promise.reject(this.unwritable!);
    }
    const done = deferred<number>();
    this.queue.push({ batch, done });
    this.queued += batch.length;
    this.flushing ??= this.drain();
    return done.promise;
  }

  /** Refuses appends from now on; held ones get one last try. Resolves once all are settled. */
  async close(): Promise<void> {
    this.closing = true;
    this.retry.wake();
    while (this.flushing !== undefined) await this.flushing;
  }

  /**
   * Group commit: whatever queued up during one write+fsync goes into the next single one.
   * While the file cannot be written, the oldest append is tried alone after each pause (a
   * small record fits first when a little space comes back); once it is written, grouping
   * resumes. When closing, a failed try gives up what is held.
   */
  private async drain(): Promise<void> {
    const retry = this.retry;
    try {
      while (this.queue.length > 0) {
        if (!retry.failing) {
          const group = this.queue;
          this.queue = [];
          await this.commitGroup(group);
          continue;
        }
        if (!this.closing) await retry.pause();
        // Appends with nothing new settle without a write: they prove nothing.
        let outcome: Outcome;
        do outcome = await this.commitGroup(this.queue.splice(0, 1));
        while (outcome === 'settled' && this.queue.length > 0);
        if (outcome === 'written') retry.succeeded(this.queued);
        else if (outcome === 'held' && this.closing) this.giveUp();
      }
    } finally {
      this.flushing = undefined;
    }
  }

  /**
   * Writes one group as one record and settles its appends ('written', or 'settled' when
   * nothing in it was new or it was refused); 'held' if the file could not be written: the
   * group is then back at the front of the queue for the next try.
   */
  private async commitGroup(group: PendingAppend[]): Promise<Outcome> {
    // Groups run one after another, so every key held is durable or in this group.
    let claimed: Claimed;
    let payload: Buffer | undefined;
    /** Where the record lies once written (table, record), when the tail's summary has it. */
    let stored: [RecordTable, number] | undefined;
    try {
      claimed = this.keys.claimAll(group, this.feed.length);
    } catch (e) {
      this.settle(group, coerceError(e));
      return 'settled';
    }
    const { fresh, counts } = claimed;
    if (fresh.length > 0) {
      payload = encodeNotifications(fresh);
      const record = frameRecord(payload);
      try {
        await this.segments.write(record);
      } catch (e) {
        this.keys.unclaimAll(fresh);
        this.queue = group.concat(this.queue);
        const file = (e as { path?: unknown }).path;
        this.retry.failed(e, typeof file === 'string' ? file : this.segments.file, this.queued);
        return 'held';
      }
      stored = this.segments.written(record, payload.length, claimed);
    }
    // The feed reads the record back from the file once it is no longer hot: holding the
    // encodings of a whole tail segment would cost up to twice its size (payloads are slices of
    // the encoder's shared buffers). A copy is kept only when no summary describes the record.
    if (stored !== undefined) this.feed.pushStored(stored[0], stored[1], fresh.length, fresh);
    else if (payload !== undefined) {
      this.feed.pushEncoded(Buffer.from(payload), fresh.length, fresh);
    }
    this.settle(group, undefined, counts);
    return fresh.length > 0 ? 'written' : 'settled';
  }

  /** Resolves each append of `group` with its count of new notifications, or rejects all. */
  private settle(group: PendingAppend[], err: Error | undefined, counts: number[] = []): void {
    for (const [i, p] of group.entries()) {
      this.queued -= p.batch.length;
      if (err === undefined) p.done.resolve(counts[i] ?? 0);
      else p.done.reject(err);
    }
  }

  /** Closing while the file still cannot be written: what is held is given up, and counted. */
  private giveUp(): void {
    const group = this.queue;
    this.queue = [];
    let lost: number;
    try {
      const { fresh } = this.keys.claimAll(group, this.feed.length);
      this.keys.unclaimAll(fresh);
      lost = fresh.length;
    } catch {
      lost = group.reduce((n, p) => n + p.batch.length, 0);
    }
    this.lostCount += lost;
    const err = this.retry.error(0, lost)!;
    this.logger.error('store closed with notifications it could not write', {
      path: err.path,
      errno: err.errno,
      lost,
    });
    this.settle(group, err);
  }
}
