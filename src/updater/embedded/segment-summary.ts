import { crc32 } from 'node:zlib';

/**
 * A sealed segment's summary: what EmbeddedStore.open needs from the segment without decoding
 * it (docs/state-store.md, "Embedded store"). Pure encoding, no I/O.
 *
 * Binary layout, little-endian, every array 4-byte aligned (8 for the f64 one):
 *
 * ```
 *  0  8  magic 'PFSUMMRY'
 *  8  u32 crc32 of bytes [12, end)
 * 12  u32 format version (1)
 * 16  f64 byte size of the segment file
 * 24  f64 first: feed position of the segment's first notification
 * 32  u32 segment number    36 u32 R records      40 u32 N notifications   44 u32 U uids
 * 48  u32 S states          52 u32 W wide keys    56 u32 B string bytes     60 u32 flags
 * 64  f64[W] wide attempts; u32[W] wide entry index, kind bit, state index
 *     u32[R] record offsets, payload lengths, notification counts, payload crc32s
 *     u32[U] entries per uid (uids in the uid index's table order, see tableOrder)
 *     u32[N] key codes, u32[N] positions - first   (uid-major; positions ascending per uid)
 *     u32[U+S] UTF-8 byte lengths of the strings: the uids, then the state names
 *     u8[B]  the strings
 * ```
 *
 * A key code packs (kind, attempt, state index) as attempt * 2^13 + state * 2 + kind bit (see
 * packKey); one that does not fit in 32 bits is WIDE_KEY, its parts in the wide table.
 */
export const SUMMARY_MAGIC = 'PFSUMMRY';
export const SUMMARY_VERSION = 1;
export const SUMMARY_HEADER_BYTES = 64;
/** Key code standing for a key whose parts are in the wide table. */
export const WIDE_KEY = 0xffffffff;
/**
 * States numbered at or past this, and attempts at or past KEY_ATTEMPT_LIMIT, do not pack: a
 * packed key is < 2^31, an int32 (the store's uid index holds int32 codes).
 */
export const KEY_STATE_LIMIT = 4096;
export const KEY_ATTEMPT_LIMIT = 2 ** 18;
/** Flag: every string is ASCII (decoded with one call, then sliced). */
const FLAG_ASCII = 1;

/** (kind bit, attempt, state number) as one exact number, or -1 when out of range. */
export function packKey(kind: number, attempt: number, state: number): number {
  if (state >= KEY_STATE_LIMIT || attempt >= KEY_ATTEMPT_LIMIT) return -1;
  return attempt * 8192 + state * 2 + kind;
}

/** Inverse of packKey for a code >= 0. */
export function unpackKey(code: number): { kind: number; attempt: number; state: number } {
  const attempt = Math.floor(code / 8192);
  const rest = code - attempt * 8192;
  return { kind: rest & 1, attempt, state: rest >> 1 };
}

/** The records of a segment, one per feed chunk, in file order. */
export interface SummaryRecords {
  /** Byte offset of the record (its header) in the segment. */
  offsets: Uint32Array;
  /** Payload length, as in the record's header. */
  lengths: Uint32Array;
  /** Notifications in the record. */
  counts: Uint32Array;
  /** crc32 of the payload, as in the record's header. */
  crcs: Uint32Array;
}

/** Keys that do not pack into 32 bits; `at` indexes the uid-major entry arrays. */
export interface WideKeys {
  at: Uint32Array;
  kinds: Uint32Array;
  states: Uint32Array;
  attempts: Float64Array;
}

export interface SegmentSummary {
  segment: number;
  /** Size of the sealed segment file: a summary of a file of another size is not used. */
  segmentBytes: number;
  /** Feed position of the segment's first notification. */
  first: number;
  notifications: number;
  records: SummaryRecords;
  /** State names: a key's state number indexes this table. */
  states: string[];
  /** The uids, one after the other: uid u is uidText.slice(uidStarts[u], uidStarts[u + 1]). */
  uidText: string;
  /** U + 1 character offsets into uidText. */
  uidStarts: Uint32Array;
  /** Per uid, how many entries follow in keys/positions. */
  uidCounts: Uint32Array;
  /** Key codes, uid-major. */
  keys: Uint32Array;
  /** Feed positions less `first`, uid-major, ascending within a uid. */
  positions: Uint32Array;
  wide: WideKeys;
}

/** Thrown by decodeSummary: the caller falls back to scanning the segment. */
export class SummaryFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SummaryFormatError';
  }
}

export function encodeSummary(s: SegmentSummary): Buffer {
  const R = s.records.offsets.length;
  const N = s.keys.length;
  const U = s.uidCounts.length;
  const S = s.states.length;
  const W = s.wide.at.length;
  // The uid table is written in one piece when it is ASCII (the usual case), else uid by uid.
  const lengths = new Uint32Array(U + S);
  const uidBytes = Buffer.byteLength(s.uidText, 'utf8');
  let ascii = uidBytes === s.uidText.length;
  const uids = ascii ? undefined : uidsOf(s);
  let B = 0;
  for (let u = 0; u < U; u++) {
    lengths[u] = uids === undefined ? s.uidStarts[u + 1]! - s.uidStarts[u]! : byteLength(uids[u]!);
    B += lengths[u]!;
  }
  s.states.forEach((state, i) => {
    lengths[U + i] = byteLength(state);
    if (lengths[U + i] !== state.length) ascii = false;
    B += lengths[U + i]!;
  });
  const total = SUMMARY_HEADER_BYTES + W * 20 + R * 16 + U * 4 + N * 8 + (U + S) * 4 + B;
  const buf = Buffer.alloc(total);
  buf.write(SUMMARY_MAGIC, 0, 'latin1');
  buf.writeUInt32LE(SUMMARY_VERSION, 12);
  buf.writeDoubleLE(s.segmentBytes, 16);
  buf.writeDoubleLE(s.first, 24);
  buf.writeUInt32LE(s.segment, 32);
  buf.writeUInt32LE(R, 36);
  buf.writeUInt32LE(N, 40);
  buf.writeUInt32LE(U, 44);
  buf.writeUInt32LE(S, 48);
  buf.writeUInt32LE(W, 52);
  buf.writeUInt32LE(B, 56);
  buf.writeUInt32LE(ascii ? FLAG_ASCII : 0, 60);
  let at = SUMMARY_HEADER_BYTES;
  const put = (a: Uint32Array | Float64Array): void => {
    Buffer.from(a.buffer, a.byteOffset, a.byteLength).copy(buf, at);
    at += a.byteLength;
  };
  for (const a of [s.wide.attempts, s.wide.at, s.wide.kinds, s.wide.states]) put(toLE(a));
  const r = s.records;
  for (const a of [r.offsets, r.lengths, r.counts, r.crcs, s.uidCounts, s.keys, s.positions]) {
    put(toLE(a));
  }
  put(toLE(lengths));
  if (uids === undefined) at += buf.write(s.uidText, at, 'utf8');
  else for (const uid of uids) at += buf.write(uid, at, 'utf8');
  for (const state of s.states) at += buf.write(state, at, 'utf8');
  buf.writeUInt32LE(crc32(buf.subarray(12)), 8);
  return buf;
}

/**
 * Reads a summary back; checks magic, version, crc and that its tables are consistent.
 * The arrays may be views on `buf`.
 */
export function decodeSummary(buf: Buffer): SegmentSummary {
  if (buf.length < SUMMARY_HEADER_BYTES) throw new SummaryFormatError('shorter than its header');
  if (buf.toString('latin1', 0, 8) !== SUMMARY_MAGIC) throw new SummaryFormatError('bad magic');
  const version = buf.readUInt32LE(12);
  if (version !== SUMMARY_VERSION) {
    throw new SummaryFormatError(`version ${version}, expected ${SUMMARY_VERSION}`);
  }
  if (crc32(buf.subarray(12)) !== buf.readUInt32LE(8)) throw new SummaryFormatError('bad crc');
  const segmentBytes = buf.readDoubleLE(16);
  const first = buf.readDoubleLE(24);
  const segment = buf.readUInt32LE(32);
  const R = buf.readUInt32LE(36);
  const N = buf.readUInt32LE(40);
  const U = buf.readUInt32LE(44);
  const S = buf.readUInt32LE(48);
  const W = buf.readUInt32LE(52);
  const B = buf.readUInt32LE(56);
  const flags = buf.readUInt32LE(60);
  const total = SUMMARY_HEADER_BYTES + W * 20 + R * 16 + U * 4 + N * 8 + (U + S) * 4 + B;
  if (buf.length !== total) {
    throw new SummaryFormatError(`${buf.length} bytes, its header describes ${total}`);
  }
  if (!Number.isSafeInteger(segmentBytes) || !Number.isSafeInteger(first) || first < 0) {
    throw new SummaryFormatError('bad segment size or first position');
  }
  let at = SUMMARY_HEADER_BYTES;
  const f64 = (n: number): Float64Array => {
    const a = viewF64(buf, at, n);
    at += n * 8;
    return a;
  };
  const u32 = (n: number): Uint32Array => {
    const a = viewU32(buf, at, n);
    at += n * 4;
    return a;
  };
  const wide: WideKeys = { attempts: f64(W), at: u32(W), kinds: u32(W), states: u32(W) };
  const records: SummaryRecords = {
    offsets: u32(R),
    lengths: u32(R),
    counts: u32(R),
    crcs: u32(R),
  };
  const uidCounts = u32(U);
  const keys = u32(N);
  const positions = u32(N);
  const lengths = u32(U + S);
  let stringBytes = 0;
  for (let i = 0; i < U + S; i++) stringBytes += lengths[i]!;
  if (stringBytes !== B) throw new SummaryFormatError('string lengths do not add up');
  const [uidText, uidStarts, states] = decodeStrings(buf, at, lengths, U, flags & FLAG_ASCII);

  // Consistency: records tile the segment; counts add up; indexes are in range.
  let end = 0;
  let counted = 0;
  for (let i = 0; i < R; i++) {
    if (records.offsets[i] !== end) throw new SummaryFormatError(`record ${i} is not contiguous`);
    end += 8 + records.lengths[i]!;
    counted += records.counts[i]!;
  }
  if (end !== segmentBytes) throw new SummaryFormatError('records do not end at segment end');
  if (counted !== N) throw new SummaryFormatError('record counts do not add up');
  let entries = 0;
  for (let u = 0; u < U; u++) entries += uidCounts[u]!;
  if (entries !== N) throw new SummaryFormatError('uid counts do not add up');
  for (let i = 0; i < N; i++) {
    if (positions[i]! >= N) throw new SummaryFormatError(`position out of range at ${i}`);
    const key = keys[i]!;
    if (key !== WIDE_KEY && (key & 8191) >> 1 >= S) {
      throw new SummaryFormatError(`state out of range at ${i}`);
    }
  }
  for (let i = 0; i < W; i++) {
    if (wide.at[i]! >= N || keys[wide.at[i]!] !== WIDE_KEY || wide.states[i]! >= S) {
      throw new SummaryFormatError(`bad wide key ${i}`);
    }
    if (wide.kinds[i]! > 1 || !Number.isSafeInteger(wide.attempts[i])) {
      throw new SummaryFormatError(`bad wide key ${i}`);
    }
  }
  return {
    segment,
    segmentBytes,
    first,
    notifications: N,
    records,
    states,
    uidText,
    uidStarts,
    uidCounts,
    keys,
    positions,
    wide,
  };
}

/** The uids of a summary, as strings. */
export function uidsOf(s: SegmentSummary): string[] {
  const out: string[] = [];
  for (let u = 0; u + 1 < s.uidStarts.length; u++) {
    out.push(s.uidText.slice(s.uidStarts[u], s.uidStarts[u + 1]));
  }
  return out;
}

function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** `a` as little-endian bytes (itself on a little-endian machine). */
function toLE<T extends Uint32Array | Float64Array>(a: T): T {
  if (LITTLE_ENDIAN) return a;
  const copy = a.slice() as T;
  const view = new DataView(copy.buffer);
  const size = a.BYTES_PER_ELEMENT;
  for (let i = 0; i < a.length; i++) {
    if (size === 8) view.setFloat64(i * 8, a[i]!, true);
    else view.setUint32(i * 4, a[i]!, true);
  }
  return copy;
}

function viewU32(buf: Buffer, at: number, n: number): Uint32Array {
  const offset = buf.byteOffset + at;
  if (LITTLE_ENDIAN && offset % 4 === 0) return new Uint32Array(buf.buffer, offset, n);
  const a = new Uint32Array(n);
  for (let i = 0; i < n; i++) a[i] = buf.readUInt32LE(at + i * 4);
  return a;
}

function viewF64(buf: Buffer, at: number, n: number): Float64Array {
  const offset = buf.byteOffset + at;
  if (LITTLE_ENDIAN && offset % 8 === 0) return new Float64Array(buf.buffer, offset, n);
  const a = new Float64Array(n);
  for (let i = 0; i < n; i++) a[i] = buf.readDoubleLE(at + i * 8);
  return a;
}

/** The string table: [uid text, uid starts, state names]. */
function decodeStrings(
  buf: Buffer,
  at: number,
  lengths: Uint32Array,
  U: number,
  ascii: number,
): [string, Uint32Array, string[]] {
  const uidStarts = new Uint32Array(U + 1);
  let uidText: string;
  if (ascii !== 0) {
    // ASCII: one decode of the whole uid table; byte offsets are character offsets.
    for (let u = 0; u < U; u++) uidStarts[u + 1] = uidStarts[u]! + lengths[u]!;
    uidText = buf.toString('latin1', at, at + uidStarts[U]!);
    at += uidStarts[U]!;
  } else {
    const names: string[] = [];
    for (let u = 0; u < U; u++) {
      names.push(buf.toString('utf8', at, at + lengths[u]!));
      at += lengths[u]!;
      uidStarts[u + 1] = uidStarts[u]! + names[u]!.length;
    }
    uidText = names.join('');
  }
  const states: string[] = [];
  for (let i = U; i < lengths.length; i++) {
    states.push(buf.toString('utf8', at, at + lengths[i]!));
    at += lengths[i]!;
  }
  return [uidText, uidStarts, states];
}
