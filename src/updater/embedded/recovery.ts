import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import type { Notification } from '../../generated';
import { errorMeta } from '../../errors';
import type { Logger } from '../../lib/logger';
import { PRIVATE_FILE } from '../../lib/private-files';
import { parseNotification, parseNotificationBulk } from '../../lib/validate';
import { decodeNotifications, encodeNotifications } from '../notification-codec';
import type { NotificationFeed } from './feed';
import { HEADER_BYTES, scanRecords, type RecordTail } from './record';
import { decodeSummary, type SegmentSummary } from './segment-summary';
import type { SegmentWriter } from './segment-writer';
import {
  listSegments,
  readRecordHeader,
  readSummaryCounts,
  readWhole,
  RecordTable,
  segmentName,
  summaryName,
  syncDir,
} from './segments';
import { summarize, type StoreKeys } from './store-keys';
import { SummaryBuilder } from './summary-builder';

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
 * The embedded store's open: loads its segment files into the keys and the feed, repairs what
 * a crash or a bad disk left (a torn or corrupt tail is cut, later segments set aside, a
 * missing or stale summary rewritten), starts the tail segment of the SegmentWriter, and
 * reports what it found (`report`). Runs once, before any append.
 */
export class Recovery {
  readonly report: RecoveryReport = {
    records: 0,
    dropped: 0,
    tail: 'clean',
    truncatedBytes: 0,
    segments: 0,
    scannedSegments: 0,
  };

  constructor(
    private readonly dir: string,
    private readonly logger: Logger,
    private readonly segmentBytes: number,
    private readonly keys: StoreKeys,
    private readonly feed: NotificationFeed,
    private readonly segments: SegmentWriter,
  ) {}

  /**
   * Loads the segments in order: a sealed one from its summary when that is valid, else by
   * decoding it (and writing its summary); the last one, the tail, always by decoding it. The
   * first damaged record ends the store: it and everything after it is cut, later segments
   * are set aside as `<name>.damaged`.
   */
  async run(): Promise<void> {
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
    this.keys.index.reserve(uids, entries + Math.ceil(tailBytes / 50));
    let tail: Scanned | undefined;
    for (let n = 0; n < chain; n++) {
      const last = n === chain - 1;
      if (!last && (await this.openFromSummary(n))) continue;
      const scanned = await this.scanSegment(n);
      if (last || scanned.damage !== 'clean') {
        tail = scanned;
        break;
      }
      this.report.scannedSegments++;
      await this.segments.seal(scanned.n, scanned.file, scanned.goodBytes, scanned.builder);
    }
    const next = tail === undefined ? 0 : tail.n + 1;
    await this.setAside(found.filter((n) => n >= next));
    await this.openTail(tail);
    this.report.segments = this.segments.n + 1;
    if (this.segments.bytes >= this.segmentBytes) {
      // An old single-file store (or a smaller segment size): sealed now, once.
      await this.segments.roll(false);
      this.report.segments++;
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
        this.logger.warn('segment summary does not match its segment, scanning it', {
          file,
          mismatch,
        });
        return false;
      }
    } catch (e) {
      if ((e as { code?: unknown }).code !== 'ENOENT') {
        this.logger.warn('segment summary unusable, scanning its segment', {
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
    this.keys.loadSummary(s);
    const { offsets, lengths, counts, crcs } = s.records;
    const table = RecordTable.of(file, offsets, lengths, crcs);
    for (let r = 0; r < offsets.length; r++) this.feed.pushStored(table, r, counts[r]!);
    this.report.records += offsets.length;
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
    this.report.records += scan.payloads.length;
    if (scan.tail !== 'clean') this.report.tail = scan.tail;
    return { n, file, size: buf.length, goodBytes: scan.goodBytes, damage: scan.tail, builder };
  }

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
      this.report.dropped++;
      return false;
    }
    if (!Array.isArray(items)) {
      this.report.dropped++;
      return false;
    }
    const keys = this.keys;
    const fresh: Notification[] = [];
    const freshUids: number[] = [];
    const freshStates: number[] = [];
    const keep = (n: Notification): void => {
      const state = keys.stateNumber(n.state);
      const uid = keys.claim(n, state, this.feed.length + fresh.length);
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
          this.report.dropped++;
          continue;
        }
        keep(n);
      }
    }
    // An empty record is never written by the store; it has no chunk to map to either.
    const whole = fresh.length === items.length && fresh.length > 0;
    if (whole && builder !== undefined) {
      fresh.forEach((n, i) => summarize(builder, freshUids[i]!, n, freshStates[i]!));
    }
    if (fresh.length === 0) return whole;
    // The usual record is wholly valid and new: the feed keeps its bytes (a slice of the file
    // read at open) and lets the objects go. Otherwise it keeps an encoding of what was kept.
    if (whole) this.feed.pushEncoded(payload, fresh.length);
    else this.feed.pushEncoded(encodeNotifications(fresh), fresh.length);
    return whole;
  }

  /** Renames segments that come after a damaged one (or a missing one) out of the store. */
  private async setAside(segments: number[]): Promise<void> {
    if (segments.length === 0) return;
    for (const n of segments) {
      const file = path.join(this.dir, segmentName(n));
      this.report.truncatedBytes += (await fs.stat(file)).size;
      await fs.rename(file, `${file}.damaged`);
      await fs.rm(path.join(this.dir, summaryName(n)), { force: true });
      this.logger.warn('store segment set aside after damage before it', {
        file,
        renamedTo: `${file}.damaged`,
      });
    }
    await syncDir(this.dir);
  }

  /** Opens the tail segment (cut back to its intact records) and starts the writer on it. */
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
        this.report.truncatedBytes += scanned.size - scanned.goodBytes;
      }
      // A new file's directory entry must be durable too, or an fsync'd record can vanish.
      if (scanned === undefined) await syncDir(this.dir);
    } catch (e) {
      await fh.close();
      throw e;
    }
    const builder = scanned === undefined ? new SummaryBuilder(0, 0) : scanned.builder;
    this.segments.start(n, file, fh, scanned?.goodBytes ?? 0, builder);
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
