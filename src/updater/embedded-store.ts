import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { Notification } from '../generated';
import { coerceError, UsageError } from '../errors';
import { deferred, type Deferred } from '../lib/deferred';
import { silentLogger, type Logger } from '../lib/logger';
import { parseNotification, parseNotificationBulk } from '../lib/validate';
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

/**
 * What the store keeps per uid, in one array of numbers: pairs [key code, feed position].
 * A key code stands for the idempotence key less the uid (kind, attempt, state), see keyCode;
 * the positions give history(uid). 10 million notifications cost two numbers each, not a key
 * string and an object each.
 */
type UidEntry = number[];

interface PendingAppend {
  batch: readonly Notification[];
  done: Deferred<number>;
}

/**
 * The default backend: an append-only file `<dir>/store.log` of crc-checked records, each one
 * group commit of appends. Everything accepted is also kept in memory for watch and history:
 * as the records' msgpack bytes, decoded on demand, plus a compact per-uid index (see the
 * "Embedded store" section of docs/state-store.md).
 * One writer per file (the client session hosts it).
 */
export class EmbeddedStore implements StateStore {
  private readonly byUid = new Map<string, UidEntry>();
  /** State name -> number, assigned on first sight (the models have a few dozen states). */
  private readonly stateCodes = new Map<string, number>();
  private readonly rareCodes = new Map<string, number>();
  private readonly feed = new NotificationFeed(decodeChunk);
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
    const entry = this.byUid.get(uid);
    const out: Notification[] = [];
    for (let i = 1; i < (entry?.length ?? 0); i += 2) out.push(this.feed.at(entry![i]!));
    return Promise.resolve(out);
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
    // Groups run one after another, so every key held is durable or in this group.
    const fresh: Notification[] = [];
    const counts = group.map(({ batch }) => {
      let count = 0;
      for (const n of batch) {
        if (!this.claim(n, this.feed.length + fresh.length)) continue;
        fresh.push(n);
        count++;
      }
      return count;
    });
    let payload: Buffer | undefined;
    try {
      if (this.broken !== undefined) throw this.broken;
      if (fresh.length > 0) {
        payload = encode(fresh);
        await this.writeDurably(frameRecord(payload));
      }
    } catch (e) {
      for (let i = fresh.length - 1; i >= 0; i--) this.unclaim(fresh[i]!);
      const err = coerceError(e);
      for (const p of group) p.done.reject(err);
      return;
    }
    if (payload !== undefined) this.feed.pushEncoded(payload, fresh.length, fresh);
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
    // Validated once as a whole (one ajv call for the usual, all-valid record), one by one
    // only when that fails, to drop just the invalid ones.
    if (isNotificationBulk(items)) {
      for (const n of items) if (this.claim(n, this.feed.length + fresh.length)) fresh.push(n);
    } else {
      for (const item of items) {
        let n: Notification;
        try {
          n = parseNotification(item);
        } catch {
          dropped++;
          continue;
        }
        if (this.claim(n, this.feed.length + fresh.length)) fresh.push(n);
      }
    }
    if (fresh.length === 0) return dropped;
    // The usual record is wholly valid and new: the feed keeps its bytes (a slice of the file
    // read at open) and lets the objects go. Otherwise it keeps an encoding of what was kept.
    if (fresh.length === items.length) this.feed.pushEncoded(payload, fresh.length);
    else this.feed.pushEncoded(encode(fresh), fresh.length);
    return dropped;
  }

  /** Records n's key at feed position `at`; false if the store holds it already. */
  private claim(n: Notification, at: number): boolean {
    const code = this.keyCode(n);
    const entry = this.byUid.get(n.uid);
    if (entry === undefined) {
      this.byUid.set(n.uid, [code, at]);
      return true;
    }
    for (let i = 0; i < entry.length; i += 2) if (entry[i] === code) return false;
    entry.push(code, at);
    return true;
  }

  /** Undoes the latest claim of n (claims are undone newest first). */
  private unclaim(n: Notification): void {
    const entry = this.byUid.get(n.uid);
    if (entry === undefined) return;
    entry.length -= 2;
    if (entry.length === 0) this.byUid.delete(n.uid);
  }

  /**
   * (kind, attempt, state) as one number, distinct for distinct triples: attempt * 2^13 +
   * state code * 2 + kind bit while attempt < 2^30 and the state is among the first 4096 seen
   * (every real session); any other triple gets a negative code of its own, by its key string.
   */
  private keyCode(n: Notification): number {
    let state = this.stateCodes.get(n.state);
    if (state === undefined) {
      state = this.stateCodes.size;
      this.stateCodes.set(n.state, state);
    }
    if (state < 4096 && n.attempt < 2 ** 30) {
      return n.attempt * 8192 + state * 2 + (n.kind === 'pilot' ? 1 : 0);
    }
    const key = `${n.kind}\u0000${n.attempt}\u0000${n.state}`;
    let code = this.rareCodes.get(key);
    if (code === undefined) {
      code = -1 - this.rareCodes.size;
      this.rareCodes.set(key, code);
    }
    return code;
  }
}

function isNotificationBulk(items: unknown[]): items is Notification[] {
  try {
    parseNotificationBulk(items);
    return true;
  } catch {
    return false;
  }
}

/** Decodes a payload the store wrote and checked (crc, validation) when it was accepted. */
function decodeChunk(payload: Buffer): Notification[] {
  return decode(payload) as Notification[];
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
