import * as fsSync from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { crc32 } from 'node:zlib';
import { InternalError } from '../../errors';
import type { RecordSource } from './feed';
import { HEADER_BYTES } from './record';
import { SUMMARY_HEADER_BYTES, SUMMARY_MAGIC } from './segment-summary';
import { StoreError } from '../state-store';
import { PRIVATE_FILE } from '../../lib/private-files';

/**
 * Segment files of the embedded store: `store.log` is segment 0 (the name a store had before
 * segments, so an old single-file session is a one-segment store), then `store.1.log`,
 * `store.2.log`, ... A sealed segment's summary is `<segment file>.sum`.
 */
export function segmentName(n: number): string {
  return n === 0 ? 'store.log' : `store.${n}.log`;
}

export function summaryName(n: number): string {
  return `${segmentName(n)}.sum`;
}

const SEGMENT_FILE = /^store(?:\.([1-9][0-9]*))?\.log$/;
const TEMP_SUFFIX = '.tmp';

/** Segment numbers found in `dir`, ascending; removes temporary files a crash left behind. */
export async function listSegments(dir: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await fs.readdir(dir)) {
    const m = SEGMENT_FILE.exec(name);
    if (m !== null) found.push(m[1] === undefined ? 0 : Number(m[1]));
    else if (name.startsWith('store.') && name.endsWith(TEMP_SUFFIX)) {
      await fs.rm(path.join(dir, name), { force: true });
    }
  }
  return found.sort((a, b) => a - b);
}

/**
 * Writes `data` to `dir/name` so that a crash leaves either the old file or the whole new one:
 * temp file, fsync, rename, fsync of the directory.
 */
export async function writeFileAtomically(dir: string, name: string, data: Buffer): Promise<void> {
  const final = path.join(dir, name);
  const temp = final + TEMP_SUFFIX;
  const fh = await fs.open(temp, 'w', PRIVATE_FILE);
  try {
    for (let off = 0; off < data.length;) {
      off += (await fh.write(data, off)).bytesWritten;
    }
    await fh.sync();
  } catch (e) {
    // A full disk: the part written would keep its space until the next open.
    await fh.close();
    await fs.rm(temp, { force: true });
    throw e;
  }
  await fh.close();
  await fs.rename(temp, final);
  await syncDir(dir);
}

export async function syncDir(dir: string): Promise<void> {
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

/**
 * Reads a whole file with as few reads as it takes (fs.readFile reads in 512 KiB steps, each a
 * trip through the thread pool). Like readFile, refuses files of 2 GiB or more.
 */
export async function readWhole(file: string): Promise<Buffer> {
  const fh = await fs.open(file, 'r');
  try {
    const size = (await fh.stat()).size;
    if (size > MAX_READ_BYTES) {
      throw new StoreError(`store file ${file} is ${size} bytes, over ${MAX_READ_BYTES}`);
    }
    const buf = Buffer.allocUnsafeSlow(size);
    let got = 0;
    while (got < size) {
      const { bytesRead } = await fh.read(buf, got, size - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return got === size ? buf : buf.subarray(0, got);
  } finally {
    await fh.close();
  }
}

/** Node's readFile limit; segments stay under it. */
export const MAX_READ_BYTES = 2 ** 31 - 1;

/** Reads the header of the record at `offset` of `file`: [payload length, crc], or undefined. */
export async function readRecordHeader(
  file: string,
  offset: number,
): Promise<[number, number] | undefined> {
  const fh = await fs.open(file, 'r');
  try {
    const header = Buffer.alloc(HEADER_BYTES);
    const { bytesRead } = await fh.read(header, 0, HEADER_BYTES, offset);
    if (bytesRead < HEADER_BYTES) return undefined;
    return [header.readUInt32LE(0), header.readUInt32LE(4)];
  } finally {
    await fh.close();
  }
}

/**
 * The records of one segment file, as the feed reads them back when it needs their
 * notifications (the feed reads synchronously): the file name once, and per record its offset
 * and crc in typed columns (a segment holds tens of thousands of records; an object each would
 * cost more than their notifications' index). Records are contiguous, as in the file, so a
 * record's length is where the next one starts. Record r is read back checked against its
 * header and the length and crc held here (the summary's); a mismatch means the file changed
 * after it was sealed.
 */
export class RecordTable implements RecordSource {
  private offsets: Uint32Array;
  private crcs: Uint32Array;
  private n = 0;
  /** Where the last record ends. */
  private end = 0;

  constructor(
    readonly file: string,
    capacity = 64,
  ) {
    this.offsets = new Uint32Array(capacity);
    this.crcs = new Uint32Array(capacity);
  }

  /** A table of the records given by columns (copied: they may be views on a summary). */
  static of(
    file: string,
    offsets: ArrayLike<number>,
    lengths: ArrayLike<number>,
    crcs: ArrayLike<number>,
  ): RecordTable {
    const table = new RecordTable(file, offsets.length);
    for (let r = 0; r < offsets.length; r++) table.add(offsets[r]!, lengths[r]!, crcs[r]!);
    return table;
  }

  /** Number of records. */
  get length(): number {
    return this.n;
  }

  /**
   * Adds the record at `offset` (of its header; where the previous record ends) with its
   * payload's length and crc; returns its index.
   */
  add(offset: number, length: number, crc: number): number {
    if (
      !Number.isInteger(offset) ||
      offset < 0 ||
      (this.n > 0 && offset !== this.end) ||
      !Number.isInteger(length) ||
      length < 0 ||
      offset + HEADER_BYTES + length > MAX_READ_BYTES ||
      !Number.isInteger(crc) ||
      crc < 0 ||
      crc > 0xffffffff
    ) {
      throw new InternalError('record-table-add');
    }
    if (this.n === this.offsets.length) this.resize(Math.max(64, this.n * 2));
    this.offsets[this.n] = offset;
    this.crcs[this.n] = crc;
    this.end = offset + HEADER_BYTES + length;
    return this.n++;
  }

  /** Gives back the room kept for more records (the segment is sealed). */
  trim(): void {
    if (this.n < this.offsets.length) this.resize(this.n);
  }

  /** Record r as [offset, payload length, crc]. */
  record(r: number): [number, number, number] {
    if (!Number.isInteger(r) || r < 0 || r >= this.n) {
      throw new InternalError('record-table-index');
    }
    const offset = this.offsets[r]!;
    const next = r + 1 < this.n ? this.offsets[r + 1]! : this.end;
    return [offset, next - offset - HEADER_BYTES, this.crcs[r]!];
  }

  /** Record r's payload, checked; throws StoreError if the file no longer holds it. */
  read(r: number): Buffer {
    const [offset, length, crc] = this.record(r);
    const buf = Buffer.allocUnsafe(HEADER_BYTES + length);
    let fd: number;
    try {
      fd = fsSync.openSync(this.file, 'r');
    } catch (e) {
      throw new StoreError(`store segment ${this.file} cannot be read`, { cause: e });
    }
    try {
      let got = 0;
      while (got < buf.length) {
        const n = fsSync.readSync(fd, buf, got, buf.length - got, offset + got);
        if (n === 0) break;
        got += n;
      }
      const payload = buf.subarray(HEADER_BYTES);
      if (
        got !== buf.length ||
        buf.readUInt32LE(0) !== length ||
        buf.readUInt32LE(4) !== crc ||
        crc32(payload) !== crc
      ) {
        throw new StoreError(
          `store segment ${this.file} changed after it was sealed: the record at offset ` +
            `${offset} does not match its summary`,
        );
      }
      return payload;
    } finally {
      fsSync.closeSync(fd);
    }
  }

  private resize(capacity: number): void {
    const copy = (a: Uint32Array): Uint32Array => {
      const b = new Uint32Array(capacity);
      b.set(a.subarray(0, this.n));
      return b;
    };
    this.offsets = copy(this.offsets);
    this.crcs = copy(this.crcs);
  }
}

/** Uid and notification counts from a summary's header (unchecked: for sizing only). */
export async function readSummaryCounts(
  file: string,
): Promise<{ uids: number; notifications: number } | undefined> {
  let fh: fs.FileHandle;
  try {
    fh = await fs.open(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const header = Buffer.alloc(SUMMARY_HEADER_BYTES);
    const { bytesRead } = await fh.read(header, 0, SUMMARY_HEADER_BYTES, 0);
    if (bytesRead < SUMMARY_HEADER_BYTES) return undefined;
    if (header.toString('latin1', 0, 8) !== SUMMARY_MAGIC) return undefined;
    return { notifications: header.readUInt32LE(40), uids: header.readUInt32LE(44) };
  } finally {
    await fh.close();
  }
}
