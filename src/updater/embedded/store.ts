import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { Notification } from '../../generated';
import { coerceError, errorMeta, UsageError } from '../../errors';
import { deferred, type Deferred } from '../../lib/deferred';
import { systemClock, type Clock } from '../../lib/clock';
import { silentLogger, type Logger } from '../../lib/logger';
import { parseNotification, parseNotificationBulk } from '../../lib/validate';
import { NotificationFeed } from './feed';
import { DurableWriter, onLocalFileSystem } from './durable-writer';
import { decodeNotifications, encodeNotifications } from '../notification-codec';
import { frameRecord, HEADER_BYTES, scanRecords, type RecordTail } from './record';
import {
  decodeSummary,
  encodeSummary,
  packKey,
  unpackKey,
  WIDE_KEY,
  type SegmentSummary,
} from './segment-summary';
import { SummaryBuilder } from './summary-builder';
import {
  listSegments,
  readRecordHeader,
  readSummaryCounts,
  readWhole,
  RecordTable,
  segmentName,
  summaryName,
  syncDir,
  writeFileAtomically,
} from './segments';
import {
  StoreError,
  type StoreUnwritableError,
  type StateStore,
  type WatchBulk,
} from '../state-store';
import { WriteRetry, type UnwritableListener } from './write-retry';
import { MAX_POSITION, UidIndex } from './uid-index';
import { PRIVATE_FILE, makePrivateDirAsync } from '../../lib/private-files';

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

/** What open() found in the files. */
export interface RecoveryReport {
  /** Intact records in the store (those of sealed segments opened from summaries included). */
  records: number;
  /** Notifications (or undecodable records) read back that failed validation and were dropped. */
  dropped: number;
  /** How the store ended: 'clean', or the kind of damage to the record where it was cut. */
  tail: RecordTail;
  /** Bytes cut off (the torn or corrupt record and anything after it, later segments too). */
  truncatedBytes: number;
  /** Segment files the store now consists of: the sealed ones and the tail. */
  segments: number;
  /** Sealed segments decoded at open for lack of a valid summary (whose summary was rewritten). */
  scannedSegments: number;
}

interface PendingAppend {
  batch: readonly Notification[];
  done: Deferred<number>;
}

type Outcome = 'written' | 'settled' | 'held';

/** A group's new notifications (with their uid and state numbers), and per append its count. */
interface Claimed {
  fresh: Notification[];
  uids: number[];
  states: number[];
  counts: number[];
}

/** The segment appends go to. */
interface Tail {
  n: number;
  file: string;
  fh: fs.FileHandle;
  /** Length of the intact file: a failed write is cut back to it. */
  bytes: number;
  /** A failed write left bytes past `bytes` that a cut did not remove yet. */
  torn: boolean;
  /** Collects the segment's summary; undefined once a record could not be kept byte for byte. */
  builder: SummaryBuilder | undefined;
  /**
   * The feed reads the segment's records back from this table: it holds the builder's records
   * (those scanned at open are added when the first append comes, or when the segment is sealed).
   */
  table: RecordTable;
}

/** A segment read whole at open. */
interface Scanned {
  n: number;
  file: string;
  /** Size of the file as found. */
  size: number;
  /** Length of its intact records. */
  goodBytes: number;
  damage: RecordTail;
  builder: SummaryBuilder | undefined;
}

/**
 * The default backend: append-only segment files `<dir>/store.log`, `store.1.log`, ... of
 * crc-checked records, each one group commit of appends; a segment is sealed at a size and gets
 * a summary file that lets open() skip decoding it. Everything accepted is also held for watch
 * and history: as the records' msgpack bytes (in memory for the tail segment, read back from
 * the file for sealed ones), decoded on demand, plus a compact per-uid index (see the
 * "Embedded store" section of docs/state-store.md).
 * One writer per directory (the client session hosts it).
 */
export class EmbeddedStore implements StateStore {
  /**
   * Per uid, pairs [key code, feed position]: a key code stands for the idempotence key less
   * the uid (kind, attempt, state), see codeOf; the positions give history(uid).
   */
  private readonly index = new UidIndex();
  /** State name -> number, assigned on first sight (the models have a few dozen states). */
  private readonly stateCodes = new Map<string, number>();
  private readonly stateNames: string[] = [];
  private readonly rareCodes = new Map<string, number>();
  private readonly feed = new NotificationFeed(decodeChunk);
  private tail!: Tail;
  private queue: PendingAppend[] = [];
  /** Notifications in the queue and in the group being committed. */
  private queued = 0;
  private flushing: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  /** Notifications given up at close because the file could still not be written. */
  private lostCount = 0;
  private readonly summaryWrites = new Set<Promise<void>>();
  /** Made once the directory exists: how it syncs depends on its file system. */
  private writer = new DurableWriter({ inline: false });
  private recovered: RecoveryReport = {
    records: 0,
    dropped: 0,
    tail: 'clean',
    truncatedBytes: 0,
    segments: 0,
    scannedSegments: 0,
  };

  private constructor(
    readonly dir: string,
    private readonly opts: CompiledEmbeddedStoreOptions,
  ) {}

  static async open(dir: string, opts: EmbeddedStoreOptions = {}): Promise<EmbeddedStore> {
    const store = new EmbeddedStore(dir, compileOptions(opts));
    await makePrivateDirAsync(dir);
    store.writer = new DurableWriter({ inline: onLocalFileSystem(dir) });
    try {
      await store.recover();
    } catch (e) {
      await (store.tail as Tail | undefined)?.fh.close();
      throw e;
    }
    const r = store.recovered;
    if (r.tail !== 'clean' || r.dropped > 0 || r.truncatedBytes > 0) {
      store.opts.logger.warn('store files repaired', { dir, ...r });
    }
    return store;
  }

  /** The tail segment: the file appends go to. */
  get file(): string {
    return this.tail.file;
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
    return this.opts.retry.error(this.queued);
  }

  /** Listens for the store becoming unwritable (the error) and writable again (undefined). */
  onUnwritable(listener: UnwritableListener): () => void {
    return this.opts.retry.onChange(listener);
  }

  /** Notifications given up at close because the file could still not be written. */
  get lost(): number {
    return this.lostCount;
  }

  append(batch: Notification[]): Promise<number> {
    if (this.closing !== undefined) {
      return Promise.reject(new UsageError('append on a closed store'));
    }
    if (this.opts.retry.failing && this.queued + batch.length > this.opts.maxHeld) {
      return Promise.reject(this.unwritable!);
    }
    const done = deferred<number>();
    this.queue.push({ batch, done });
    this.queued += batch.length;
    this.flushing ??= this.drain();
    return done.promise;
  }

  watch(fromCursor = 0): AsyncIterableIterator<WatchBulk> {
    return this.feed.watch(fromCursor);
  }

  history(uid?: string): Promise<Notification[]> {
    try {
      if (uid === undefined) return Promise.resolve(this.feed.all());
      const positions = this.index.positionsOf(this.index.find(uid));
      return Promise.resolve(positions.map((at) => this.feed.at(at)));
    } catch (e) {
      // A sealed segment read back differently from what its summary says.
      return Promise.reject(coerceError(e));
    }
  }

  /** Held appends get one last try; what still cannot be written is given up (`lost`). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.opts.retry.wake();
      while (this.flushing !== undefined) await this.flushing;
      this.feed.end();
      await this.tail.fh.close();
      await Promise.all([...this.summaryWrites]);
    })();
    return this.closing;
  }

  // ---- open ----

  /**
   * Loads the segments in order: a sealed one from its summary when that is valid, else by
   * decoding it (and writing its summary); the last one, the tail, always by decoding it. The
   * first damaged record ends the store: it and everything after it is cut, later segments
   * are set aside as `<name>.damaged`.
   */
  private async recover(): Promise<void> {
    const found = await listSegments(this.dir);
    let chain = 0;
    while (found[chain] === chain) chain++;
    // Room for the index in one step, as far as the summaries tell.
    let uids = 0;
    let entries = 0;
    for (let n = 0; n < chain - 1; n++) {
      const counts = await readSummaryCounts(path.join(this.dir, summaryName(n)));
      uids += counts?.uids ?? 0;
      entries += counts?.notifications ?? 0;
    }
    // The tail's notifications, guessed from its size (a notification takes 50 bytes or more).
    const tailBytes = chain > 0 ? await sizeOf(path.join(this.dir, segmentName(chain - 1))) : 0;
    this.index.reserve(uids, entries + Math.ceil(tailBytes / 50));
    let tail: Scanned | undefined;
    for (let n = 0; n < chain; n++) {
      const last = n === chain - 1;
      if (!last && (await this.openFromSummary(n))) continue;
      const scanned = await this.scanSegment(n);
      if (last || scanned.damage !== 'clean') {
        tail = scanned;
        break;
      }
      this.recovered.scannedSegments++;
      await this.seal(scanned.n, scanned.file, scanned.goodBytes, scanned.builder);
    }
    const next = tail === undefined ? 0 : tail.n + 1;
    await this.setAside(found.filter((n) => n >= next));
    await this.openTail(tail);
    this.recovered.segments = this.tail.n + 1;
    if (this.tail.bytes >= this.opts.segmentBytes) {
      // An old single-file store (or a smaller segment size): sealed now, once.
      await this.roll(false);
      this.recovered.segments++;
    }
  }

  /** Loads sealed segment n from its summary; false if there is none or it does not fit. */
  private async openFromSummary(n: number): Promise<boolean> {
    const file = path.join(this.dir, segmentName(n));
    const sumFile = path.join(this.dir, summaryName(n));
    let summary: SegmentSummary;
    try {
      summary = decodeSummary(await readWhole(sumFile));
      const size = (await fs.stat(file)).size;
      const last = summary.records.offsets.length - 1;
      const header =
        last < 0 ? undefined : await readRecordHeader(file, summary.records.offsets[last]!);
      const mismatch =
        summary.segment !== n
          ? 'segment number'
          : summary.first !== this.feed.length
            ? 'first position'
            : summary.segmentBytes !== size
              ? 'segment size'
              : last >= 0 &&
                  (header?.[0] !== summary.records.lengths[last] ||
                    header?.[1] !== summary.records.crcs[last])
                ? 'last record'
                : undefined;
      if (mismatch !== undefined) {
        this.opts.logger.warn('segment summary does not match its segment, scanning it', {
          file,
          mismatch,
        });
        return false;
      }
    } catch (e) {
      if ((e as { code?: unknown }).code !== 'ENOENT') {
        this.opts.logger.warn('segment summary unusable, scanning its segment', {
          file: sumFile,
          ...errorMeta(e),
        });
      }
      return false;
    }
    this.loadSummary(summary, file);
    return true;
  }

  /** Builds the uid index and the feed's chunks of a sealed segment from its summary. */
  private loadSummary(s: SegmentSummary, file: string): void {
    const states = s.states.map((name) => this.stateNumber(name));
    const identity = states.every((code, i) => code === i);
    const wideAt = new Map<number, number>();
    for (let w = 0; w < s.wide.at.length; w++) wideAt.set(s.wide.at[w]!, w);
    const { keys, positions, uidCounts, uidStarts } = s;
    const index = this.index;
    const text = index.addText(s.uidText);
    index.reserve(uidCounts.length, keys.length);
    const first = s.first;
    let e = 0;
    const direct = identity && wideAt.size === 0;
    for (let u = 0; u < uidCounts.length; u++) {
      const uid = index.uidIn(text, uidStarts[u]!, uidStarts[u + 1]! - uidStarts[u]!);
      if (direct) {
        // The codes are this store's own: copied as they are.
        index.addRun(uid, keys, positions, e, uidCounts[u]!, first);
        e += uidCounts[u]!;
        continue;
      }
      for (const end = e + uidCounts[u]!; e < end; e++) {
        const key = keys[e]!;
        let code: number;
        if (key === WIDE_KEY) {
          const w = wideAt.get(e)!;
          code = this.codeOf(s.wide.kinds[w]!, s.wide.attempts[w]!, states[s.wide.states[w]!]!);
        } else if (identity) {
          code = key;
        } else {
          const { kind, attempt, state } = unpackKey(key);
          code = this.codeOf(kind, attempt, states[state]!);
        }
        index.add(uid, code, first + positions[e]!);
      }
    }
    const { offsets, lengths, counts, crcs } = s.records;
    const table = RecordTable.of(file, offsets, lengths, crcs);
    for (let r = 0; r < offsets.length; r++) this.feed.pushStored(table, r, counts[r]!);
    this.recovered.records += offsets.length;
  }

  /** Reads segment n whole and loads its intact records (validated). */
  private async scanSegment(n: number): Promise<Scanned> {
    const file = path.join(this.dir, segmentName(n));
    const buf = await readWhole(file);
    const scan = scanRecords(buf);
    let builder: SummaryBuilder | undefined = new SummaryBuilder(n, this.feed.length);
    for (const payload of scan.payloads) {
      const offset = payload.byteOffset - buf.byteOffset - HEADER_BYTES;
      const before = this.feed.length;
      const kept = this.load(payload, builder);
      if (!kept) builder = undefined;
      builder?.addRecord(
        offset,
        payload.length,
        this.feed.length - before,
        buf.readUInt32LE(offset + 4),
      );
    }
    this.recovered.records += scan.payloads.length;
    if (scan.tail !== 'clean') this.recovered.tail = scan.tail;
    return { n, file, size: buf.length, goodBytes: scan.goodBytes, damage: scan.tail, builder };
  }

  /** Renames segments that come after a damaged one (or a missing one) out of the store. */
  private async setAside(segments: number[]): Promise<void> {
    if (segments.length === 0) return;
    for (const n of segments) {
      const file = path.join(this.dir, segmentName(n));
      this.recovered.truncatedBytes += (await fs.stat(file)).size;
      await fs.rename(file, `${file}.damaged`);
      await fs.rm(path.join(this.dir, summaryName(n)), { force: true });
      this.opts.logger.warn('store segment set aside after damage before it', {
        file,
        renamedTo: `${file}.damaged`,
      });
    }
    await syncDir(this.dir);
  }

  private async openTail(scanned: Scanned | undefined): Promise<void> {
    const n = scanned?.n ?? 0;
    const file = scanned?.file ?? path.join(this.dir, segmentName(n));
    // A summary of the tail is stale (segments after it were lost): appends change it.
    await fs.rm(path.join(this.dir, summaryName(n)), { force: true });
    const fh = await fs.open(file, 'a', PRIVATE_FILE);
    try {
      if (scanned !== undefined && scanned.goodBytes < scanned.size) {
        await fh.truncate(scanned.goodBytes);
        await fh.datasync();
        this.recovered.truncatedBytes += scanned.size - scanned.goodBytes;
      }
      // A new file's directory entry must be durable too, or an fsync'd record can vanish.
      if (scanned === undefined) await syncDir(this.dir);
    } catch (e) {
      await fh.close();
      throw e;
    }
    const builder = scanned === undefined ? new SummaryBuilder(0, 0) : scanned.builder;
    this.tail = tailOf(n, file, fh, scanned?.goodBytes ?? 0, builder);
  }

  // ---- segments ----

  /**
   * Seals the tail and starts the next segment. The next segment's directory entry is durable
   * before anything is written to it; the sealed one's summary is written in the background
   * when `background` (close() waits for it; a crash before it is there costs one scan of the
   * segment at open), so that the append that rolled is not held up by it.
   */
  private async roll(background: boolean): Promise<void> {
    const old = this.tail;
    const n = old.n + 1;
    const file = path.join(this.dir, segmentName(n));
    const fh = await fs.open(file, 'a', PRIVATE_FILE);
    try {
      await syncDir(this.dir);
    } catch (e) {
      await fh.close();
      throw e;
    }
    this.tail = tailOf(n, file, fh, 0, new SummaryBuilder(n, this.feed.length));
    try {
      await old.fh.close();
    } catch (e) {
      this.opts.logger.warn('closing a sealed segment failed', { file: old.file, ...errorMeta(e) });
    }
    const written = this.seal(old.n, old.file, old.bytes, old.builder, old.table);
    if (background) {
      this.summaryWrites.add(written);
      void written.finally(() => this.summaryWrites.delete(written));
    } else {
      await written;
    }
  }

  /**
   * A segment is complete and durable: its records are read back from the file from now on,
   * and its summary is written (atomically). Never rejects: without a summary, the segment is
   * decoded at the next open.
   */
  private seal(
    n: number,
    file: string,
    bytes: number,
    builder: SummaryBuilder | undefined,
    table = new RecordTable(file),
  ): Promise<void> {
    if (builder === undefined) {
      this.opts.logger.warn('segment sealed without a summary: it held records not kept as is', {
        file,
      });
      return Promise.resolve();
    }
    fillTable(table, builder);
    table.trim();
    const counts = new Uint32Array(builder.records);
    for (let i = 0; i < counts.length; i++) counts[i] = builder.record(i)[2];
    this.feed.moveToStored(builder.first, table, 0, counts);
    const summary = encodeSummary(builder.build(bytes, this.stateNames, this.index));
    return writeFileAtomically(this.dir, summaryName(n), summary).catch((e: unknown) => {
      this.opts.logger.warn('segment summary not written; the segment will be decoded at open', {
        file,
        ...errorMeta(e),
      });
    });
  }

  // ---- appends ----

  /**
   * Group commit: whatever queued up during one write+fsync goes into the next single one.
   * While the file cannot be written, the oldest append is tried alone after each pause (a
   * small record fits first when a little space comes back); once it is written, grouping
   * resumes. When closing, a failed try gives up what is held.
   */
  private async drain(): Promise<void> {
    const retry = this.opts.retry;
    try {
      while (this.queue.length > 0) {
        if (!retry.failing) {
          const group = this.queue;
          this.queue = [];
          await this.commitGroup(group);
          continue;
        }
        if (this.closing === undefined) await retry.pause();
        // Appends with nothing new settle without a write: they prove nothing.
        let outcome: Outcome;
        do outcome = await this.commitGroup(this.queue.splice(0, 1));
        while (outcome === 'settled' && this.queue.length > 0);
        if (outcome === 'written') retry.succeeded(this.queued);
        else if (outcome === 'held' && this.closing !== undefined) this.giveUp();
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
      claimed = this.claimAll(group);
    } catch (e) {
      this.settle(group, coerceError(e));
      return 'settled';
    }
    const { fresh, uids, states, counts } = claimed;
    if (fresh.length > 0) {
      payload = encodeNotifications(fresh);
      const record = frameRecord(payload);
      try {
        await this.cutTorn();
        if (this.tail.bytes > 0 && this.tail.bytes + record.length > this.opts.segmentBytes) {
          await this.roll(true);
        }
        await this.writeDurably(record);
      } catch (e) {
        this.unclaimAll(fresh);
        this.queue = group.concat(this.queue);
        const file = (e as { path?: unknown }).path;
        this.opts.retry.failed(e, typeof file === 'string' ? file : this.tail.file, this.queued);
        return 'held';
      }
      const builder = this.tail.builder;
      if (builder !== undefined) {
        const offset = this.tail.bytes - record.length;
        builder.addRecord(offset, payload.length, fresh.length, record.readUInt32LE(4));
        fresh.forEach((n, i) => this.summarize(builder, uids[i]!, n, states[i]!));
        const table = this.tail.table;
        fillTable(table, builder);
        stored = [table, table.length - 1];
      }
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
      const { fresh } = this.claimAll(group);
      this.unclaimAll(fresh);
      lost = fresh.length;
    } catch {
      lost = group.reduce((n, p) => n + p.batch.length, 0);
    }
    this.lostCount += lost;
    const err = this.opts.retry.error(0, lost)!;
    this.opts.logger.error('store closed with notifications it could not write', {
      path: err.path,
      errno: err.errno,
      lost,
    });
    this.settle(group, err);
  }

  /** Claims the keys of a group's notifications; per append, how many were new. */
  private claimAll(group: PendingAppend[]): Claimed {
    const c: Claimed = { fresh: [], uids: [], states: [], counts: [] };
    try {
      for (const { batch } of group) {
        let count = 0;
        for (const n of batch) {
          const state = this.stateNumber(n.state);
          const uid = this.claim(n, state, this.feed.length + c.fresh.length);
          if (uid < 0) continue;
          c.fresh.push(n);
          c.uids.push(uid);
          c.states.push(state);
          count++;
        }
        c.counts.push(count);
      }
    } catch (e) {
      this.unclaimAll(c.fresh);
      throw e;
    }
    return c;
  }

  private unclaimAll(fresh: Notification[]): void {
    for (let i = fresh.length - 1; i >= 0; i--) this.unclaim(fresh[i]!);
  }

  /** A failed write whose cut failed too left bytes past the intact file: cut them first. */
  private async cutTorn(): Promise<void> {
    const tail = this.tail;
    if (!tail.torn) return;
    await tail.fh.truncate(tail.bytes);
    tail.torn = false;
  }

  private async writeDurably(record: Buffer): Promise<void> {
    const tail = this.tail;
    try {
      await this.writer.write(tail.fh, record);
      tail.bytes += record.length;
    } catch (e) {
      // A partial record would hide every later one on reopen (and after a failed fsync the
      // written bytes cannot be trusted): cut back to the last good one, or before the next try.
      tail.torn = true;
      await this.cutTorn().catch(() => undefined);
      throw e;
    }
  }

  // ---- the index ----

  /**
   * Reads one record back (a boundary: validated again) and adds what it holds to `builder`;
   * returns false if the record could not be kept byte for byte (invalid or repeated
   * notifications in it: the feed then holds a re-encoding of what was kept).
   */
  private load(payload: Buffer, builder: SummaryBuilder | undefined): boolean {
    let items: unknown;
    try {
      items = decodeNotifications(payload);
    } catch {
      this.recovered.dropped++;
      return false;
    }
    if (!Array.isArray(items)) {
      this.recovered.dropped++;
      return false;
    }
    const fresh: Notification[] = [];
    const freshUids: number[] = [];
    const freshStates: number[] = [];
    const keep = (n: Notification): void => {
      const state = this.stateNumber(n.state);
      const uid = this.claim(n, state, this.feed.length + fresh.length);
      if (uid < 0) return;
      fresh.push(n);
      freshUids.push(uid);
      freshStates.push(state);
    };
    // Validated once as a whole (one ajv call for the usual, all-valid record), one by one
    // only when that fails, to drop just the invalid ones.
    if (isNotificationBulk(items)) {
      for (const n of items) keep(n);
    } else {
      for (const item of items) {
        let n: Notification;
        try {
          n = parseNotification(item);
        } catch {
          this.recovered.dropped++;
          continue;
        }
        keep(n);
      }
    }
    // An empty record is never written by the store; it has no chunk to map to either.
    const whole = fresh.length === items.length && fresh.length > 0;
    if (whole && builder !== undefined) {
      fresh.forEach((n, i) => this.summarize(builder, freshUids[i]!, n, freshStates[i]!));
    }
    if (fresh.length === 0) return whole;
    // The usual record is wholly valid and new: the feed keeps its bytes (a slice of the file
    // read at open) and lets the objects go. Otherwise it keeps an encoding of what was kept.
    if (whole) this.feed.pushEncoded(payload, fresh.length);
    else this.feed.pushEncoded(encodeNotifications(fresh), fresh.length);
    return whole;
  }

  /** Adds n (its uid and state by number) to a segment's summary. */
  private summarize(builder: SummaryBuilder, uid: number, n: Notification, state: number): void {
    const kind = n.kind === 'pilot' ? 1 : 0;
    builder.add(uid, packKey(kind, n.attempt, state), kind, n.attempt, state);
  }

  /**
   * Records n's key (its state by number) at feed position `at`; returns the number of n's
   * uid in the index, or -1 if the store holds the key already.
   */
  private claim(n: Notification, state: number, at: number): number {
    if (at > MAX_POSITION) {
      throw new StoreError(`the embedded store holds at most ${MAX_POSITION + 1} notifications`);
    }
    const uid = this.index.intern(n.uid);
    return this.index.claim(uid, this.codeOf(n.kind === 'pilot' ? 1 : 0, n.attempt, state), at)
      ? uid
      : -1;
  }

  /** Undoes the latest claim of n (claims are undone newest first). */
  private unclaim(n: Notification): void {
    this.index.unclaim(this.index.find(n.uid));
  }

  private stateNumber(state: string): number {
    let code = this.stateCodes.get(state);
    if (code === undefined) {
      code = this.stateNames.length;
      this.stateCodes.set(state, code);
      this.stateNames.push(state);
    }
    return code;
  }

  /**
   * (kind, attempt, state) as one int32, distinct for distinct triples: attempt * 2^13 +
   * state number * 2 + kind bit (packKey) while attempt < 2^18 and the state is among the first
   * 4096 seen (every real session); any other triple gets a negative code of its own, by its
   * key string.
   */
  private codeOf(kind: number, attempt: number, state: number): number {
    const packed = packKey(kind, attempt, state);
    if (packed >= 0) return packed;
    const key = `${kind}\u0000${attempt}\u0000${this.stateNames[state]}`;
    let code = this.rareCodes.get(key);
    if (code === undefined) {
      code = -1 - this.rareCodes.size;
      this.rareCodes.set(key, code);
    }
    return code;
  }
}

/** The tail at segment n, `bytes` long, with an empty record table (fillTable fills it). */
function tailOf(
  n: number,
  file: string,
  fh: fs.FileHandle,
  bytes: number,
  builder: SummaryBuilder | undefined,
): Tail {
  return { n, file, fh, bytes, torn: false, builder, table: new RecordTable(file) };
}

/** Adds to `table` the records of `builder` it lacks (it holds the builder's first ones). */
function fillTable(table: RecordTable, builder: SummaryBuilder): void {
  for (let r = table.length; r < builder.records; r++) {
    const [offset, length, , crc] = builder.record(r);
    table.add(offset, length, crc);
  }
}

async function sizeOf(file: string): Promise<number> {
  try {
    return (await fs.stat(file)).size;
  } catch {
    return 0;
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
  return decodeNotifications(payload) as Notification[];
}
