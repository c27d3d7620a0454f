import { describe, expect, it } from '@jest/globals';
import { frameRecord, HEADER_BYTES, scanRecords } from '../../../../src/updater/embedded/record';

describe('scanRecords', () => {
  const a = frameRecord(Buffer.from('first payload'));
  const b = frameRecord(Buffer.from('second'));

  it('reads every record of an intact file and reports it clean', () => {
    const scan = scanRecords(Buffer.concat([a, b]));
    expect(scan.payloads.map((p) => p.toString())).toEqual(['first payload', 'second']);
    expect(scan).toMatchObject({ goodBytes: a.length + b.length, tail: 'clean' });
    expect(scanRecords(Buffer.alloc(0))).toEqual({ payloads: [], goodBytes: 0, tail: 'clean' });
  });

  it('stops before a record whose header or payload runs past the end', () => {
    for (const cut of [1, HEADER_BYTES - 1, HEADER_BYTES, b.length - 1]) {
      const scan = scanRecords(Buffer.concat([a, b.subarray(0, cut)]));
      expect({ cut, tail: scan.tail, goodBytes: scan.goodBytes }).toEqual({
        cut,
        tail: 'torn',
        goodBytes: a.length,
      });
    }
  });

  it('stops at the first crc mismatch and trusts nothing after it', () => {
    const damaged = Buffer.concat([a, a, b]);
    damaged[HEADER_BYTES + 2] = damaged[HEADER_BYTES + 2]! ^ 0x01;
    expect(scanRecords(damaged)).toEqual({ payloads: [], goodBytes: 0, tail: 'crc-mismatch' });
  });
});
