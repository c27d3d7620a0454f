import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { Notification } from '../generated';
import { coerceError, UsageError } from '../errors';
import { deferred, type Deferred } from '../lib/deferred';
import { silentLogger, type Logger } from '../lib/logger';
import { parseNotification } from '../lib/validate';
import { notificationKey } from '../states/notification';
import { decode, encode } from '../transport/codec';
import { NotificationFeed } from './feed';
import { frameRecord, scanRecords, type RecordTail } from './record';
import { StoreError, type StateStore, type WatchBulk } from './state-store';

/** What open() found in the file. */
export interface RecoveryReport {
  /** Intact records read back. */
  records: number;
  /** Notifications (or undecodable records) read back that failed validation and were dropped. */
  dropped: number;
  /** How the file ended: 'clean', or the kind of damage to its last record. */
  tail: RecordTail;
  /** Bytes cut off the end of the file (the torn or corrupt record and anything after it). */
  truncatedBytes: number;
}

interface PendingAppend {
  batch: readonly Notification[];
  done: Deferred<number>;
}

/**
 * The default backend: an append-only file `<dir>/store.log` of crc-checked records, each one
 * group commit of appends. Everything accepted is also kept in memory for watch and history.
 * One writer per file (the client session hosts it).
 */
export class EmbeddedStore implements StateStore {
  private readonly keys = new Set<string>();
  private readonly byUid = new Map<string, Notification[]>();
  private readonly feed = new NotificationFeed();
  private queue: PendingAppend[] = [];
  private flushing: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private broken: StoreError | undefined;
  private recovered: RecoveryReport = { records: 0, dropped: 0, tail: 'clean', truncatedBytes: 0 };

  private constructor(
    readonly file: string,
    private readonly fh: fs.FileHandle,
    /** Length of the intact file: a failed write is cut back to it. */
    private bytes: number,
  ) {}

  static async open(dir: string, opts: { logger?: Logger } = {}): Promise<EmbeddedStore> {
    const log = (opts.logger ?? silentLogger).child({ component: 'embedded-store' });
    await fs.mkdir(dir, { recursive: true });
    const file = path.join(dir, 'store.log');
    const existing = await readIfExists(file);
    const scan = scanRecords(existing ?? Buffer.alloc(0));
    const fh = await fs.open(file, 'a');
    try {
      if (existing !== undefined && scan.goodBytes < existing.length) {
        await fh.truncate(scan.goodBytes);
        await fh.datasync();
      }
      // A new file's directory entry must be durable too, or an fsync'd record can vanish.
      if (existing === undefined) await syncDir(dir);
    } catch (e) {
      await fh.close();
      throw e;
    }
    const store = new EmbeddedStore(file, fh, scan.goodBytes);
    store.recovered = {
      records: scan.payloads.length,
      dropped: scan.payloads.reduce((sum, p) => sum + store.load(p), 0),
      tail: scan.tail,
      truncatedBytes: (existing?.length ?? 0) - scan.goodBytes,
    };
    if (store.recovered.tail !== 'clean' || store.recovered.dropped > 0) {
      log.warn('store file repaired', { file, ...store.recovered });
    }
    return store;
  }

  /** What open() found and repaired in the file. */
  get recovery(): RecoveryReport {
    return { ...this.recovered };
  }

  /** Number of accepted notifications. */
  get size(): number {
    return this.feed.length;
  }

  append(batch: Notification[]): Promise<number> {
    if (this.closing !== undefined) {
      return Promise.reject(new UsageError('append on a closed store'));
    }
    if (this.broken !== undefined) return Promise.reject(this.broken);
    const done = deferred<number>();
    this.queue.push({ batch, done });
    this.flushing ??= this.drain();
    return done.promise;
  }

  watch(fromCursor = 0): AsyncIterableIterator<WatchBulk> {
    return this.feed.watch(fromCursor);
  }

  history(uid?: string): Promise<Notification[]> {
    if (uid === undefined) return Promise.resolve(this.feed.all());
    return Promise.resolve((this.byUid.get(uid) ?? []).slice());
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      while (this.flushing !== undefined) await this.flushing;
      this.feed.end();
      await this.fh.close();
    })();
    return this.closing;
  }

  /** Group commit: whatever queued up during one write+fsync goes into the next single one. */
  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const group = this.queue;
        this.queue = [];
        await this.commitGroup(group);
      }
    } finally {
      this.flushing = undefined;
    }
  }

  private async commitGroup(group: PendingAppend[]): Promise<void> {
    // Groups run one after another, so every key in the set is durable or in this group.
    const fresh: Notification[] = [];
    const counts = group.map(({ batch }) => {
      let count = 0;
      for (const n of batch) {
        const key = notificationKey(n);
        if (this.keys.has(key)) continue;
        this.keys.add(key);
        fresh.push(n);
        count++;
      }
      return count;
    });
    try {
      if (this.broken !== undefined) throw this.broken;
      if (fresh.length > 0) await this.writeDurably(frameRecord(encode(fresh)));
    } catch (e) {
      for (const n of fresh) this.keys.delete(notificationKey(n));
      const err = coerceError(e);
      for (const p of group) p.done.reject(err);
      return;
    }
    this.commit(fresh);
    group.forEach((p, i) => p.done.resolve(counts[i] ?? 0));
  }

  private async writeDurably(record: Buffer): Promise<void> {
    try {
      for (let off = 0; off < record.length;) {
        off += (await this.fh.write(record, off)).bytesWritten;
      }
      await this.fh.datasync();
      this.bytes += record.length;
    } catch (e) {
      // A partial record would hide every later one on reopen: cut back to the last good one.
      try {
        await this.fh.truncate(this.bytes);
      } catch (cut) {
        this.broken = new StoreError(
          `store file ${this.file} could not be repaired after a failed write`,
          {
            cause: cut,
          },
        );
      }
      throw e;
    }
  }

  /** Reads one record back (a boundary: validated again); returns how many were dropped. */
  private load(payload: Buffer): number {
    let items: unknown;
    try {
      items = decode(payload);
    } catch {
      return 1;
    }
    if (!Array.isArray(items)) return 1;
    let dropped = 0;
    const fresh: Notification[] = [];
    for (const item of items) {
      let n: Notification;
      try {
        n = parseNotification(item);
      } catch {
        dropped++;
        continue;
      }
      const key = notificationKey(n);
      if (this.keys.has(key)) continue;
      this.keys.add(key);
      fresh.push(n);
    }
    this.commit(fresh);
    return dropped;
  }

  private commit(fresh: Notification[]): void {
    if (fresh.length === 0) return;
    for (const n of fresh) {
      const list = this.byUid.get(n.uid);
      if (list === undefined) this.byUid.set(n.uid, [n]);
      else list.push(n);
    }
    this.feed.push(fresh);
  }
}

async function readIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await fs.readFile(file);
  } catch (e) {
    if ((e as { code?: unknown }).code === 'ENOENT') return undefined;
    throw e;
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } catch (e) {
    // Some filesystems refuse fsync on a directory; the file's own fsync still holds.
    if ((e as { code?: unknown }).code !== 'EINVAL') throw e;
  } finally {
    await handle.close();
  }
}
