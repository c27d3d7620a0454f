import { describe, expect, it } from '@jest/globals';
import { InternalError } from '../../../../src/errors';
import { UidIndex } from '../../../../src/updater/embedded/uid-index';

describe('UidIndex', () => {
  it('holds a key once per uid and gives positions in the order added', () => {
    const index = new UidIndex();
    const a = index.intern('task.a');
    const b = index.intern('task.b');
    expect(index.intern('task.a')).toBe(a);
    expect(index.claim(a, 10, 0)).toBe(true);
    expect(index.claim(b, 10, 1)).toBe(true);
    expect(index.claim(a, 10, 2)).toBe(false);
    expect(index.claim(a, -3, 3)).toBe(true);
    expect(index.positionsOf(a)).toEqual([0, 3]);
    expect(index.codesOf(a)).toEqual([10, -3]);
    expect(index.positionsOf(index.find('task.b'))).toEqual([1]);
    expect(index.find('task.c')).toBe(-1);
    expect(index.positionsOf(-1)).toEqual([]);
    expect([index.size, index.length]).toEqual([2, 3]);
  });

  it('finds tens of thousands of similar uids after growing, by string or by text range', () => {
    const index = new UidIndex();
    const uids = Array.from({ length: 20_000 }, (_, i) => `task.${String(i).padStart(7, '0')}`);
    uids.forEach((uid, i) => index.claim(index.intern(uid), 1, i));
    // The same uids again as ranges of one text, as a segment summary gives them.
    const text = index.addText(uids.join(''));
    const mismatched = uids.filter((uid, i) => {
      const n = index.uidIn(text, i * uid.length, uid.length);
      index.add(n, 2, 20_000 + i);
      return n !== index.find(uid);
    });
    expect(mismatched).toEqual([]);
    expect(index.size).toBe(20_000);
    for (const i of [0, 1, 12_345, 19_999]) {
      const n = index.find(uids[i]!);
      expect(index.name(n)).toBe(uids[i]);
      expect(index.positionsOf(n)).toEqual([i, 20_000 + i]);
    }
    expect(index.find('task.0020000')).toBe(-1);
  });

  it('tells apart uids that differ in length or in a non-ASCII character', () => {
    const index = new UidIndex();
    const uids = ['t', 'tt', 'té', 'tè', 't\u{1F600}', 'ttt'];
    for (const uid of uids) index.claim(index.intern(uid), 0, uids.indexOf(uid));
    expect(uids.map((uid) => index.positionsOf(index.find(uid)))).toEqual(uids.map((_, i) => [i]));
    const text = index.addText('xtéx');
    expect(index.uidIn(text, 1, 2)).toBe(index.find('té'));
  });

  it('appends a run after what a uid holds, and reserves room without losing anything', () => {
    const index = new UidIndex();
    const a = index.intern('a');
    index.claim(a, 7, 0);
    index.reserve(10_000, 100_000);
    const codes = Uint32Array.from([1, 2, 3, 4]);
    const offsets = Uint32Array.from([0, 5, 6, 9]);
    index.addRun(a, codes, offsets, 1, 3, 100);
    expect(index.codesOf(a)).toEqual([7, 2, 3, 4]);
    expect(index.positionsOf(a)).toEqual([0, 105, 106, 109]);
    expect(index.claim(a, 3, 200)).toBe(false);
    const b = index.intern('b');
    index.addRun(b, codes, offsets, 0, 2, 0);
    index.claim(a, 9, 300);
    expect(index.positionsOf(b)).toEqual([0, 5]);
    expect(index.positionsOf(a)).toEqual([0, 105, 106, 109, 300]);
  });

  it('undoes claims newest first, and refuses to undo one that is not the newest', () => {
    const index = new UidIndex();
    const a = index.intern('a');
    const b = index.intern('b');
    index.claim(a, 1, 0);
    index.claim(b, 1, 1);
    index.claim(a, 2, 2);
    index.claim(a, 3, 3);
    expect(() => index.unclaim(b)).toThrow(InternalError);
    index.unclaim(a);
    index.unclaim(a);
    expect(index.positionsOf(a)).toEqual([0]);
    index.unclaim(b);
    expect(index.positionsOf(b)).toEqual([]);
    expect(index.claim(b, 1, 1)).toBe(true);
    expect(index.claim(a, 2, 2)).toBe(true);
    expect(index.positionsOf(a)).toEqual([0, 2]);
    expect(index.length).toBe(3);
  });
});
