import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { errorMeta } from '../../errors';
import type { Logger } from '../../lib/logger';
import { PRIVATE_FILE } from '../../lib/private-files';
import type { DurableWriter } from './durable-writer';
import type { NotificationFeed } from './feed';
import { encodeSummary } from './segment-summary';
import { RecordTable, segmentName, summaryName, syncDir, writeFileAtomically } from './segments';
import { summarize, type Claimed, type StoreKeys } from './store-keys';
import { SummaryBuilder } from './summary-builder';

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

/**
 * The embedded store's segment files once open: the tail segment appends go to (durable
 * writes, a torn write cut back), the roll to the next segment at a size and the seal of the
 * full one (its records read back from the file from then on, its summary written). Recovery
 * hands it the tail it opened (start) and has it seal the segments it had to scan.
 */
export class SegmentWriter {
  private tail!: Tail;
  private readonly summaryWrites = new Set<Promise<void>>();

  constructor(
    private readonly dir: string,
    private readonly logger: Logger,
    private readonly segmentBytes: number,
    /** How a record is made durable (it depends on the directory's file system). */
    private readonly writer: DurableWriter,
    private readonly feed: NotificationFeed,
    private readonly keys: StoreKeys,
  ) {}

  /** Appends go to segment n from now on: `fh` is open on `file`, whose first `bytes` are intact. */
  start(
    n: number,
    file: string,
    fh: fs.FileHandle,
    bytes: number,
    builder: SummaryBuilder | undefined,
  ): void {
    this.tail = { n, file, fh, bytes, torn: false, builder, table: new RecordTable(file) };
  }

  /** The tail segment's number. */
  get n(): number {
    return this.tail.n;
  }

  /** The tail segment: the file appends go to. */
  get file(): string {
    return this.tail.file;
  }

  /** Length of the tail's intact records. */
  get bytes(): number {
    return this.tail.bytes;
  }

  /**
   * Writes a record at the end of the tail, durably, first sealing the tail and starting the
   * next segment if the record would take it past segmentBytes. On a throw the tail is as it
   * was (or marked torn, to be cut back before the next write).
   */
  write(record: Buffer): Promise<void> {
    const tail = this.tail;
    if (!tail.torn && !this.full(record)) return this.writeDurably(record);
    return this.cutRollWrite(record);
  }

  /** Whether `record` would take the tail past segmentBytes (a record always fits an empty one). */
  private full(record: Buffer): boolean {
    const bytes = this.tail.bytes;
    return bytes > 0 && bytes + record.length > this.segmentBytes;
  }

  /** write(), the slow way: a torn write to cut first, or a roll. */
  private async cutRollWrite(record: Buffer): Promise<void> {
    await this.cutTorn();
    if (this.full(record)) await this.roll(true);
    await this.writeDurably(record);
  }

  /**
   * Adds the record just written (framing a payload of `payloadLength` bytes that holds
   * `claimed`'s notifications) to the tail's summary; returns where the feed can read it back
   * (table, record), or undefined when no summary describes the tail.
   */
  written(
    record: Buffer,
    payloadLength: number,
    claimed: Claimed,
  ): [RecordTable, number] | undefined {
    const tail = this.tail;
    const builder = tail.builder;
    if (builder === undefined) return undefined;
    const { fresh, uids, states } = claimed;
    builder.addRecord(
      tail.bytes - record.length,
      payloadLength,
      fresh.length,
      record.readUInt32LE(4),
    );
    fresh.forEach((n, i) => summarize(builder, uids[i]!, n, states[i]!));
    const table = tail.table;
    fillTable(table, builder);
    return [table, table.length - 1];
  }

  /** Closes the tail's file (if one was started) and waits for summaries being written. */
  async close(): Promise<void> {
    await (this.tail as Tail | undefined)?.fh.close();
    await Promise.all([...this.summaryWrites]);
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

  /**
   * Seals the tail and starts the next segment. The next segment's directory entry is durable
   * before anything is written to it; the sealed one's summary is written in the background
   * when `background` (close() waits for it; a crash before it is there costs one scan of the
   * segment at open), so that the append that rolled is not held up by it.
   */
  async roll(background: boolean): Promise<void> {
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
    this.start(n, file, fh, 0, new SummaryBuilder(n, this.feed.length));
    try {
      await old.fh.close();
    } catch (e) {
      this.logger.warn('closing a sealed segment failed', { file: old.file, ...errorMeta(e) });
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
  seal(
    n: number,
    file: string,
    bytes: number,
    builder: SummaryBuilder | undefined,
    table = new RecordTable(file),
  ): Promise<void> {
    if (builder === undefined) {
      this.logger.warn('segment sealed without a summary: it held records not kept as is', {
        file,
      });
      return Promise.resolve();
    }
    fillTable(table, builder);
    table.trim();
    const counts = new Uint32Array(builder.records);
    for (let i = 0; i < counts.length; i++) counts[i] = builder.record(i)[2];
    this.feed.moveToStored(builder.first, table, 0, counts);
    const summary = encodeSummary(builder.build(bytes, this.keys.stateNames, this.keys.index));
    return writeFileAtomically(this.dir, summaryName(n), summary).catch((e: unknown) => {
      this.logger.warn('segment summary not written; the segment will be decoded at open', {
        file,
        ...errorMeta(e),
      });
    });
  }
}

/** Adds to `table` the records of `builder` it lacks (it holds the builder's first ones). */
function fillTable(table: RecordTable, builder: SummaryBuilder): void {
  for (let r = table.length; r < builder.records; r++) {
    const [offset, length, , crc] = builder.record(r);
    table.add(offset, length, crc);
  }
}
