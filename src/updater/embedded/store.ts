import type { Notification } from '../../generated';
import { coerceError, UsageError } from '../../errors';
import { systemClock, type Clock } from '../../lib/clock';
import { silentLogger, type Logger } from '../../lib/logger';
import { makePrivateDirAsync } from '../../lib/private-files';
import { decodeNotifications } from '../notification-codec';
import type { StateStore, StoreUnwritableError, WatchBulk } from '../state-store';
import { DurableWriter, onLocalFileSystem } from './durable-writer';
import { NotificationFeed } from './feed';
import { GroupCommit } from './group-commit';
import { Recovery, type RecoveryReport } from './recovery';
import { SegmentWriter } from './segment-writer';
import { StoreKeys } from './store-keys';
import { WriteRetry, type UnwritableListener } from './write-retry';

export type { RecoveryReport } from './recovery';

export interface EmbeddedStoreOptions {
  logger?: Logger;
  /**
   * A segment is sealed (and the next one started) when a record would take it past this many
   * bytes. Default 32 MiB; at most 2^31 - 1 (Node's readFile limit). Small values are for tests.
   */
  segmentBytes?: number;
  /**
   * While the file cannot be written (a full disk), appends are held and the write is tried
   * again after firstMs, then twice as long each time up to maxMs. Default 50 ms to 1 s.
   */
  retryMs?: { first?: number; max?: number };
  /**
   * Notifications held while the file cannot be written beyond which appends are refused at
   * once (their UpdateWorkers keep them and send them again). Default 131072.
   */
  maxHeld?: number;
  /** Times the retries (default: the system clock). */
  clock?: Clock;
}

export const DEFAULT_SEGMENT_BYTES = 32 * 2 ** 20;
const MAX_SEGMENT_BYTES = 2 ** 31 - 1;

interface CompiledEmbeddedStoreOptions {
  logger: Logger;
  segmentBytes: number;
  retry: WriteRetry;
  maxHeld: number;
}

function compileOptions(opts: EmbeddedStoreOptions): CompiledEmbeddedStoreOptions {
  const segmentBytes = opts.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
  if (!Number.isInteger(segmentBytes) || segmentBytes < 1 || segmentBytes > MAX_SEGMENT_BYTES) {
    throw new UsageError(
      `EmbeddedStore: segmentBytes must be an integer from 1 to ${MAX_SEGMENT_BYTES}, ` +
        `got ${String(segmentBytes)}`,
    );
  }
  const logger = (opts.logger ?? silentLogger).child({ component: 'embedded-store' });
  const first = opts.retryMs?.first ?? 50;
  const retry = new WriteRetry(
    opts.clock ?? systemClock,
    first,
    opts.retryMs?.max ?? 1_000,
    logger,
  );
  return { logger, segmentBytes, retry, maxHeld: opts.maxHeld ?? 131_072 };
}

/**
 * The default backend: append-only segment files `<dir>/store.log`, `store.1.log`, ... of
 * crc-checked records, each one group commit of appends; a segment is sealed at a size and gets
 * a summary file that lets open() skip decoding it. Everything accepted is also held for watch
 * and history: as the records' msgpack bytes (in memory for the tail segment, read back from
 * the file for sealed ones), decoded on demand, plus a compact per-uid index (see the
 * "Embedded store" section of docs/state-store.md).
 * One writer per directory (the client session hosts it).
 *
 * This class is the facade; its parts share the keys and the feed: Recovery (recovery.ts: the
 * open, its repairs and report), GroupCommit (group-commit.ts: appends, fsync'd in groups, held
 * while the disk is full), SegmentWriter (segment-writer.ts: the tail's writes, roll and seal)
 * and StoreKeys (store-keys.ts: the idempotence keys, the uid index).
 */
export class EmbeddedStore implements StateStore {
  private closing: Promise<void> | undefined;

  private constructor(
    readonly dir: string,
    private readonly opts: CompiledEmbeddedStoreOptions,
    private readonly keys: StoreKeys,
    private readonly feed: NotificationFeed,
    private readonly segments: SegmentWriter,
    private readonly commit: GroupCommit,
    private readonly recovered: RecoveryReport,
  ) {}

  static async open(dir: string, opts: EmbeddedStoreOptions = {}): Promise<EmbeddedStore> {
    const o = compileOptions(opts);
    await makePrivateDirAsync(dir);
    // Made once the directory exists: how it syncs depends on its file system.
    const writer = new DurableWriter({ inline: onLocalFileSystem(dir) });
    const keys = new StoreKeys();
    const feed = new NotificationFeed(decodeChunk);
    const segments = new SegmentWriter(dir, o.logger, o.segmentBytes, writer, feed, keys);
    const recovery = new Recovery(dir, o.logger, o.segmentBytes, keys, feed, segments);
    try {
      await recovery.run();
    } catch (e) {
      await segments.close();
      throw e;
    }
    const r = recovery.report;
    if (r.tail !== 'clean' || r.dropped > 0 || r.truncatedBytes > 0) {
      o.logger.warn('store files repaired', { dir, ...r });
    }
    const commit = new GroupCommit(keys, feed, segments, o.retry, o.maxHeld, o.logger);
    return new EmbeddedStore(dir, o, keys, feed, segments, commit, r);
  }

  /** The tail segment: the file appends go to. */
  get file(): string {
    return this.segments.file;
  }

  /** What open() found and repaired in the files. */
  get recovery(): RecoveryReport {
    return { ...this.recovered };
  }

  /** Number of accepted notifications. */
  get size(): number {
    return this.feed.length;
  }

  /**
   * While the file cannot be written, the store is unwritable: this is the condition (held
   * appends are written, in order, once a retry succeeds); undefined while it writes.
   */
  get unwritable(): StoreUnwritableError | undefined {
    return this.commit.unwritable;
  }

  /** Listens for the store becoming unwritable (the error) and writable again (undefined). */
  onUnwritable(listener: UnwritableListener): () => void {
    return this.opts.retry.onChange(listener);
  }

  /** Notifications given up at close because the file could still not be written. */
  get lost(): number {
    return this.commit.lost;
  }

  /** Refused once close() was called (GroupCommit). */
  append(batch: Notification[]): Promise<number> {
    return this.commit.append(batch);
  }

  watch(fromCursor = 0): AsyncIterableIterator<WatchBulk> {
    return this.feed.watch(fromCursor);
  }

  history(uid?: string): Promise<Notification[]> {
    try {
      if (uid === undefined) return Promise.resolve(this.feed.all());
      return Promise.resolve(this.keys.positionsOf(uid).map((at) => this.feed.at(at)));
    } catch (e) {
      // A sealed segment read back differently from what its summary says.
      return Promise.reject(coerceError(e));
    }
  }

  /** Held appends get one last try; what still cannot be written is given up (`lost`). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.commit.close();
      this.feed.end();
      await this.segments.close();
    })();
    return this.closing;
  }
}

/** Decodes a payload the store wrote and checked (crc, validation) when it was accepted. */
function decodeChunk(payload: Buffer): Notification[] {
  return decodeNotifications(payload) as Notification[];
}
