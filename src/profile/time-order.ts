/**
 * The indices of `t` in ascending order of their values, ties in index order. A radix sort on
 * 48-bit keys (three passes of 16 bits, linear), then an insertion pass on the exact values,
 * which fixes the few pairs closer than a key's step: millions of instants in well under a second,
 * where a comparator sort of an index array takes seconds.
 */
export function orderByTime(t: Float64Array): Uint32Array {
  const n = t.length;
  let idx = new Uint32Array(n);
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
    // the key's low 32 bits and high 16 bits, so that each pass takes its digit with bit operations
    const scale = (2 ** 48 - 1) / (max - min);
    const lo = new Uint32Array(n);
    const hi = new Uint16Array(n);
    for (let i = 0; i < n; i++) {
      const k = Math.floor((t[i]! - min) * scale);
      lo[i] = k % 2 ** 32;
      hi[i] = Math.floor(k / 2 ** 32);
    }
    let out = new Uint32Array(n);
    const count = new Uint32Array(65536);
    const digits = [
      (j: number) => lo[j]! & 0xffff,
      (j: number) => lo[j]! >>> 16,
      (j: number) => hi[j]!,
    ];
    for (const digit of digits) {
      count.fill(0);
      for (let i = 0; i < n; i++) count[digit(i)]!++;
      let sum = 0;
      for (let d = 0; d < 65536; d++) {
        const c = count[d]!;
        count[d] = sum;
        sum += c;
      }
      for (let i = 0; i < n; i++) {
        const j = idx[i]!;
        out[count[digit(j)]!++] = j;
      }
      [idx, out] = [out, idx];
    }
  }
  insertionFix(idx, t, 0, n);
  return idx;
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
