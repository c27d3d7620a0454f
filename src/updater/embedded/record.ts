import { crc32 } from 'node:zlib';

/**
 * Each segment file of the embedded store is a sequence of records: an 8-byte header, [uint32 LE
 * payload length][uint32 LE crc32 of the payload], then the payload (msgpack). The crc is over
 * the payload only; a torn header shows up as a length past the end of the file or a crc
 * mismatch.
 */
export const HEADER_BYTES = 8;

export function frameRecord(payload: Buffer): Buffer {
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header.writeUInt32LE(payload.length, 0);
  header.writeUInt32LE(crc32(payload), 4);
  return Buffer.concat([header, payload]);
}

export type RecordTail = 'clean' | 'torn' | 'crc-mismatch';

export interface ScanResult {
  /** Payloads of the intact records, in file order. */
  payloads: Buffer[];
  /** Byte length of the intact prefix: where the file must be truncated to. */
  goodBytes: number;
  /** Why scanning stopped before the end of the buffer, or 'clean' if it did not. */
  tail: RecordTail;
}

/**
 * Reads records from the start of `buf` and stops at the first one that is torn or corrupt.
 * Nothing after a bad record is trusted: an append-only writer only ever tears its last one.
 */
export function scanRecords(buf: Buffer): ScanResult {
  const payloads: Buffer[] = [];
  let at = 0;
  while (at < buf.length) {
    if (buf.length - at < HEADER_BYTES) return { payloads, goodBytes: at, tail: 'torn' };
    const length = buf.readUInt32LE(at);
    const crc = buf.readUInt32LE(at + 4);
    const end = at + HEADER_BYTES + length;
    if (end > buf.length) return { payloads, goodBytes: at, tail: 'torn' };
    const payload = buf.subarray(at + HEADER_BYTES, end);
    if (crc32(payload) !== crc) return { payloads, goodBytes: at, tail: 'crc-mismatch' };
    payloads.push(payload);
    at = end;
  }
  return { payloads, goodBytes: at, tail: 'clean' };
}
