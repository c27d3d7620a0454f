import { describe, expect, it } from '@jest/globals';
import {
  OutputCap,
  dropMarker,
} from '../../../../../../src/components/executor/process/helper/output-cap';
import { nextStreamPart, streamPartOf } from '../../../../../../src/lib/output-frames';

const b = (s: string): Buffer => Buffer.from(s);
const text = (pieces: { k: number; data: Buffer }[]) =>
  pieces.map((p) => `${p.k}:${p.data.toString()}`);

describe('OutputCap', () => {
  it('frames the first half as it comes, holds the last half, and drops what lies between', () => {
    const cap = new OutputCap(10); // head 5, tail 5
    expect(cap.take(0, b('abc'))?.toString()).toBe('abc');
    expect(cap.take(1, b('DEFG'))?.toString()).toBe('DE'); // the head is full: FG held
    expect(cap.take(0, b('hijk'))).toBeUndefined(); // held: G hijk (F dropped)
    expect(cap.droppedBytes).toBe(1);
    expect(cap.take(0, b('lm'))).toBeUndefined(); // held: ijk lm (G and h dropped)
    expect(cap.dropped).toEqual([1, 2]);
    // each stream's marker, on a line of its own (neither head ended a line), then the tail
    expect(text(cap.release())).toEqual([
      '0:\n[pilotfish: 1 bytes dropped]\n',
      '1:\n[pilotfish: 2 bytes dropped]\n',
      '0:ijk',
      '0:lm',
    ]);
  });

  it('drops nothing and marks nothing when all fits', () => {
    const cap = new OutputCap(8); // head 4, tail 4
    expect(cap.take(0, b('abcd\n'))?.toString()).toBe('abcd'); // its '\n' held
    expect(cap.take(0, b('ef\n'))).toBeUndefined(); // the head is full: held
    expect(text(cap.release())).toEqual(['0:\n', '0:ef\n']);
    expect(cap.droppedBytes).toBe(0);
  });

  it('puts the marker on a line of its own', () => {
    expect(dropMarker(7, false).toString()).toBe('[pilotfish: 7 bytes dropped]\n');
    expect(dropMarker(7, true).toString()).toBe('\n[pilotfish: 7 bytes dropped]\n');
  });
});

describe('nextStreamPart', () => {
  it('numbers a helper file’s parts after its name', () => {
    expect(nextStreamPart('/s/a-b/output/spawner.0.3.pfout')).toBe(
      '/s/a-b/output/spawner.0.3-1.pfout',
    );
    expect(nextStreamPart('/o/spawner.0.3-1.pfout')).toBe('/o/spawner.0.3-2.pfout');
    expect(streamPartOf('spawner.1.0-12.pfout')).toEqual({ base: 'spawner.1.0', part: 12 });
  });
});
