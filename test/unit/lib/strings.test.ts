import { describe, expect, it } from '@jest/globals';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { ownCopy } from '../../../src/lib/strings';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** Heap bytes in use once collected: full collections until the figure stops falling. */
function settledHeap(): number {
  let used = Infinity;
  for (let i = 0; i < 10; i++) {
    gc();
    const now = process.memoryUsage().heapUsed;
    // what a collection still frees (its sweeping done later, a busy machine) is not held
    if (now >= used - (1 << 20)) return Math.min(now, used);
    used = now;
  }
  return used;
}

/** Heap bytes still used after `keep` holds, of 40 strings of 4 MB each, what `take` gives. */
function heldBy(take: (slice: string) => string): number {
  const before = settledHeap();
  const keep: string[] = [];
  for (let i = 0; i < 40; i++) {
    const big = `${String(i).padStart(8, '0')}${'y'.repeat(4 << 20)}`;
    keep.push(take(big.slice(0, 20)), take(big.slice(2, 9)));
  }
  const after = settledHeap();
  expect(keep[2]).toBe(`00000001${'y'.repeat(12)}`);
  return after - before;
}

describe('ownCopy', () => {
  it('keeps nothing of the string it was sliced from alive', () => {
    // a slice of each whole string keeps it: 160 MB; copies keep a few bytes each
    expect(heldBy((s) => s)).toBeGreaterThan(100 << 20);
    expect(heldBy(ownCopy)).toBeLessThan(8 << 20);
  });

  it('copies every code unit as it is, lone surrogates too', () => {
    for (const s of ['', 'task.000001', '\ud800x', 'x\udfff', 'é漢😀', 'a'.repeat(100)]) {
      expect(ownCopy(s)).toBe(s);
    }
  });
});
