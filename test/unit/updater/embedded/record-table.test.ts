import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { InternalError } from '../../../../src/errors';
import { frameRecord, HEADER_BYTES } from '../../../../src/updater/embedded/record';
import { RecordTable } from '../../../../src/updater/embedded/segments';
import { StoreError } from '../../../../src/updater/state-store';

/** Writes `payloads` as framed records to `file`; their [offset, length, crc] columns. */
function writeSegment(file: string, payloads: readonly Buffer[]) {
  const offsets: number[] = [];
  const lengths: number[] = [];
  const crcs: number[] = [];
  let at = 0;
  for (const p of payloads) {
    offsets.push(at);
    lengths.push(p.length);
    crcs.push(crc32(p));
    at += HEADER_BYTES + p.length;
  }
  fs.writeFileSync(file, Buffer.concat(payloads.map((p) => frameRecord(p))));
  return { offsets, lengths, crcs };
}

describe('RecordTable', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-table-'));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  // Crcs with the top bit set too (they do not fit an int32).
  const payloads = Array.from({ length: 300 }, (_, r) => Buffer.from(`record ${r} `.repeat(r % 7)));

  it('reads back every record added one by one, past its first capacity', () => {
    const file = path.join(dir, 'store.1.log');
    const { offsets, lengths, crcs } = writeSegment(file, payloads);
    const table = new RecordTable(file, 4);
    offsets.forEach((o, r) => expect(table.add(o, lengths[r]!, crcs[r]!)).toBe(r));
    expect(table.length).toBe(payloads.length);
    expect(crcs.some((c) => c >= 2 ** 31)).toBe(true);
    table.trim();
    for (let r = payloads.length - 1; r >= 0; r--) {
      expect(table.read(r)).toEqual(payloads[r]);
      expect(table.record(r)).toEqual([offsets[r], lengths[r], crcs[r]]);
    }
  });

  it('copies the columns it is made of (they may be views on a summary buffer)', () => {
    const file = path.join(dir, 'store.log');
    const cols = writeSegment(file, payloads);
    const offsets = Uint32Array.from(cols.offsets);
    const table = RecordTable.of(file, offsets, cols.lengths, cols.crcs);
    offsets.fill(0);
    expect(table.read(299)).toEqual(payloads[299]);
    expect(table.file).toBe(file);
  });

  it('names the file and the offset when a record changed after it was sealed', () => {
    const file = path.join(dir, 'store.2.log');
    const { offsets, lengths, crcs } = writeSegment(file, payloads);
    const table = RecordTable.of(file, offsets, lengths, crcs);
    const bytes = fs.readFileSync(file);
    const at = offsets[5]! + HEADER_BYTES;
    bytes[at] = bytes[at]! ^ 0x01;
    fs.writeFileSync(file, bytes);
    expect(table.read(4)).toEqual(payloads[4]);
    expect(() => table.read(5)).toThrow(
      new StoreError(
        `store segment ${file} changed after it was sealed: the record at offset ` +
          `${offsets[5]} does not match its summary`,
      ),
    );
  });

  it('refuses a record whose header or length disagrees with the table, or a cut file', () => {
    const file = path.join(dir, 'store.3.log');
    const { offsets, lengths, crcs } = writeSegment(file, payloads.slice(0, 10));
    const wrongLength = new RecordTable(file);
    wrongLength.add(offsets[3]!, lengths[3]! - 1, crc32(payloads[3]!.subarray(0, -1)));
    expect(() => wrongLength.read(0)).toThrow(`the record at offset ${offsets[3]} does not match`);
    const wrongCrc = new RecordTable(file);
    wrongCrc.add(offsets[3]!, lengths[3]!, (crcs[3]! + 1) % 2 ** 32);
    expect(() => wrongCrc.read(0)).toThrow('changed after it was sealed');
    const table = RecordTable.of(file, offsets, lengths, crcs);
    fs.truncateSync(file, offsets[9]! + 3);
    expect(() => table.read(9)).toThrow('changed after it was sealed');
    fs.rmSync(file);
    expect(() => table.read(0)).toThrow(`store segment ${file} cannot be read`);
  });

  it('refuses an index it does not hold, a gap between records, or one past a segment', () => {
    const table = new RecordTable(path.join(dir, 'store.log'));
    table.add(0, 1, 1);
    expect(() => table.read(1)).toThrow(InternalError);
    expect(() => table.record(-1)).toThrow(InternalError);
    expect(() => table.add(HEADER_BYTES + 2, 0, 0)).toThrow(InternalError);
    expect(() => table.add(HEADER_BYTES + 1, 2 ** 31, 0)).toThrow(InternalError);
    expect(() => table.add(HEADER_BYTES + 1, 0, 2 ** 32)).toThrow(InternalError);
    expect(table.length).toBe(1);
    expect(table.add(HEADER_BYTES + 1, 0, 2 ** 32 - 1)).toBe(1);
    expect(table.record(0)).toEqual([0, 1, 1]);
    expect(table.record(1)).toEqual([HEADER_BYTES + 1, 0, 2 ** 32 - 1]);
  });
});
