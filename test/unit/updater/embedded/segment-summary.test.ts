import { crc32 } from 'node:zlib';
import { describe, expect, it } from '@jest/globals';
import {
  decodeSummary,
  encodeSummary,
  packKey,
  SummaryFormatError,
  uidsOf,
  unpackKey,
  WIDE_KEY,
  type SegmentSummary,
} from '../../../../src/updater/embedded/segment-summary';
import { SummaryBuilder, type SummaryUids } from '../../../../src/updater/embedded/summary-builder';
import { tableOrder } from '../../../../src/updater/embedded/uid-index';

/** The triples [uid, key, position] of a summary, in feed order. */
function triples(s: SegmentSummary): [string, number, number][] {
  const out: [string, number, number][] = [];
  let e = 0;
  uidsOf(s).forEach((uid, u) => {
    for (let k = 0; k < s.uidCounts[u]!; k++, e++) {
      out.push([uid, s.keys[e]!, s.first + s.positions[e]!]);
    }
  });
  return out.sort((a, b) => a[2] - b[2]);
}

/** Uid numbers as a caller's index would give them (not in the builder's order). */
const UIDS = ['task.a', 'task.é', 'pilot.x', 'task.b'];
const numberOf = (uid: string): number => 100 + UIDS.indexOf(uid);
/** Names and table order of the uid numbers, as the store's uid index gives them. */
const names: SummaryUids = {
  name: (n) => UIDS[n - 100]!,
  order: (n) => tableOrder(UIDS[n - 100]!),
};
const STATES = ['NEW', 'RUNNING', 'DONE'];

/** A builder fed with records of 3 notifications over 4 uids, and one wide key. */
function sample(): { builder: SummaryBuilder; added: [string, number, number][] } {
  const builder = new SummaryBuilder(7, 1_000);
  const added: [string, number, number][] = [];
  let offset = 0;
  for (let r = 0; r < 4; r++) {
    const length = 20 + r;
    builder.addRecord(offset, length, 3, 0xdead0000 + r);
    offset += 8 + length;
    for (let j = 0; j < 3; j++) {
      const i = r * 3 + j;
      const uid = UIDS[i % 4]!;
      const kind = uid.startsWith('pilot') ? 1 : 0;
      const code = packKey(kind, 1 + (i >> 2), i % 3);
      builder.add(numberOf(uid), code, kind, 1 + (i >> 2), i % 3);
      added.push([uid, code, 1_000 + i]);
    }
  }
  // An attempt too large to pack: a wide key.
  builder.add(numberOf('task.a'), packKey(0, 2 ** 25, 1), 0, 2 ** 25, 1);
  builder.addRecord(offset, 5, 1, 42);
  added.push(['task.a', WIDE_KEY, 1_012]);
  return { builder, added };
}

const SEGMENT_BYTES = 4 * 8 + 20 + 21 + 22 + 23 + 8 + 5;

describe('segment summary', () => {
  it('packs (kind, attempt, state) into one number and back', () => {
    for (const [kind, attempt, state] of [
      [0, 1, 0],
      [1, 3, 4095],
      [1, 2 ** 18 - 1, 17],
    ] as const) {
      const code = packKey(kind, attempt, state);
      expect(code).toBeGreaterThanOrEqual(0);
      expect(unpackKey(code)).toEqual({ kind, attempt, state });
    }
    expect(packKey(0, 1, 4096)).toBe(-1);
    expect(packKey(0, 2 ** 18, 0)).toBe(-1);
    expect(packKey(1, 2 ** 18 - 1, 4095)).toBe(2 ** 31 - 1); // every packed key is an int32
  });

  it('groups entries by uid, keeps feed order within a uid, and round-trips through bytes', () => {
    const { builder, added } = sample();
    const summary = builder.build(SEGMENT_BYTES, STATES, names);
    const uids = uidsOf(summary);
    expect(Object.fromEntries(uids.map((uid, u) => [uid, summary.uidCounts[u]]))).toEqual({
      'task.a': 4,
      'task.é': 3,
      'pilot.x': 3,
      'task.b': 3,
    });
    // In the order the uid index's table will take them in (by the top 16 bits).
    const order = uids.map((uid) => tableOrder(uid) >>> 16);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(triples(summary)).toEqual(added);
    expect(summary.wide.at.length).toBe(1);
    expect(summary.keys[summary.wide.at[0]!]).toBe(WIDE_KEY);
    expect(summary.wide.attempts[0]).toBe(2 ** 25);

    const decoded = decodeSummary(encodeSummary(summary));
    expect(decoded).toEqual(summary);
    expect(triples(decoded)).toEqual(added);
    expect(Array.from(decoded.records.offsets)).toEqual([0, 28, 57, 87, 118]);
    expect(Array.from(decoded.records.crcs)).toEqual([
      0xdead0000, 0xdead0001, 0xdead0002, 0xdead0003, 42,
    ]);
  });

  it('round-trips a summary of an empty segment and one read from an unaligned buffer', () => {
    const empty = new SummaryBuilder(0, 0).build(0, [], names);
    expect(decodeSummary(encodeSummary(empty))).toEqual(empty);
    const summary = sample().builder.build(SEGMENT_BYTES, STATES, names);
    const bytes = encodeSummary(summary);
    const unaligned = Buffer.alloc(bytes.length + 3).subarray(3);
    bytes.copy(unaligned);
    expect(decodeSummary(unaligned)).toEqual(summary);
  });

  it('rejects a summary with any byte changed, cut short, or of another version', () => {
    const bytes = encodeSummary(sample().builder.build(SEGMENT_BYTES, STATES, names));
    for (let at = 0; at < bytes.length; at += 7) {
      const damaged = Buffer.from(bytes);
      damaged[at] = damaged[at]! ^ 0x10;
      expect(() => decodeSummary(damaged)).toThrow(SummaryFormatError);
    }
    expect(() => decodeSummary(bytes.subarray(0, bytes.length - 1))).toThrow(SummaryFormatError);
    expect(() => decodeSummary(bytes.subarray(0, 10))).toThrow('shorter than its header');
    const other = Buffer.from(bytes);
    other.writeUInt32LE(2, 12);
    other.writeUInt32LE(crc32(other.subarray(12)), 8);
    expect(() => decodeSummary(other)).toThrow('version 2, expected 1');
  });

  it('rejects tables that do not add up even under a valid crc', () => {
    const summary = sample().builder.build(SEGMENT_BYTES, STATES, names);
    const resealed = (change: (s: SegmentSummary) => void): Buffer => {
      const copy = decodeSummary(encodeSummary(summary));
      change(copy);
      return encodeSummary(copy);
    };
    expect(() => decodeSummary(resealed((s) => (s.segmentBytes += 1)))).toThrow(
      'records do not end at segment end',
    );
    expect(() => decodeSummary(resealed((s) => (s.records.offsets[1] = 29)))).toThrow(
      'record 1 is not contiguous',
    );
    expect(() => decodeSummary(resealed((s) => (s.records.counts[0] = 4)))).toThrow(
      'record counts do not add up',
    );
    expect(() => decodeSummary(resealed((s) => (s.positions[0] = 13)))).toThrow(
      'position out of range',
    );
    expect(() => decodeSummary(resealed((s) => (s.keys[0] = packKey(0, 1, 3))))).toThrow(
      'state out of range',
    );
    expect(() => decodeSummary(resealed((s) => (s.wide.states[0] = 3)))).toThrow('bad wide key');
  });
});
