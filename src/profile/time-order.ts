import { Arena } from './arena';

/** Room for orderByTime to sort up to `length` values in; its result is a view into it. */
export interface SortScratch {
  lo: Uint32Array;
  hi: Uint32Array;
  idx: Uint32Array;
  out: Uint32Array;
}

export function sortScratch(n: number, arena?: Arena): SortScratch {
  const u32 = (k: number): Uint32Array => (arena !== undefined ? arena.u32(k) : new Uint32Array(k));
  return { lo: u32(n), hi: u32(n), idx: u32(n), out: u32(n) };
}

/** The arena bytes of sortScratch(n). */
export const sortScratchBytes = (n: number): number => Arena.size([4, n], [4, n], [4, n], [4, n]);

/**
 * The indices of `t` in ascending order of their values, ties in index order. A radix sort on
 * 48-bit keys (three passes of 16 bits, linear), then an insertion pass on the exact values,
 * which fixes the few pairs closer than a key's step: millions of instants in well under a second,
 * where a comparator sort of an index array takes seconds.
 */
export function orderByTime(t: Float64Array, scratch?: SortScratch): Uint32Array {
  const n = t.length;
  const s = scratch ?? sortScratch(n);
  let idx = s.idx.subarray(0, n);
  for (let i = 0; i < n; i++) idx[i] = i;
  if (n < 2) return idx;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const x = t[i]!;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  if (max > min) {
    // the key's low 32 bits and high 16 bits, so that each pass takes its 16-bit digit with bit operations
    const scale = (2 ** 48 - 1) / (max - min);
    const lo = s.lo;
    const hi = s.hi;
    for (let i = 0; i < n; i++) {
      const k = Math.floor((t[i]! - min) * scale);
      const h = Math.floor(k * 2 ** -32);
      hi[i] = h;
      lo[i] = k - h * 2 ** 32;
    }
    const out = s.out.subarray(0, n);
    const count = new Uint32Array(65536);
    radixPass(lo, 0, idx, out, count, n);
    radixPass(lo, 16, out, idx, count, n);
    radixPass(hi, 0, idx, out, count, n);
    idx = out;
  }
  insertionFix(idx, t, 0, n);
  return idx;
}

/** One stable counting pass on the 16-bit digit `(key >>> shift) & 0xffff`, from `idx` into `out`. */
function radixPass(
  key: Uint32Array,
  shift: number,
  idx: Uint32Array,
  out: Uint32Array,
  count: Uint32Array,
  n: number,
): void {
  count.fill(0);
  for (let i = 0; i < n; i++) count[(key[i]! >>> shift) & 0xffff]!++;
  let sum = 0;
  for (let d = 0; d < 65536; d++) {
    const c = count[d]!;
    count[d] = sum;
    sum += c;
  }
  for (let i = 0; i < n; i++) {
    const j = idx[i]!;
    out[count[(key[j]! >>> shift) & 0xffff]!++] = j;
  }
}

/** Sorts idx[from, to) by t, exactly; linear where it is nearly sorted already. */
export function insertionFix(
  idx: Uint32Array,
  t: ArrayLike<number>,
  from: number,
  to: number,
): void {
  for (let i = from + 1; i < to; i++) {
    const v = idx[i]!;
    const x = t[v]!;
    let j = i;
    while (j > from && t[idx[j - 1]!]! > x) {
      idx[j] = idx[j - 1]!;
      j--;
    }
    idx[j] = v;
  }
}
