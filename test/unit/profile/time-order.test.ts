import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { orderByTime } from '../../../src/profile/time-order';

describe('orderByTime', () => {
  it('orders indices by value exactly, ties in index order, even closer than a radix step', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.double({ min: -1e13, max: 1e13, noNaN: true }),
            fc.constantFrom(0, 1e-9, 2e-9, 1.7e12, 1.7e12 + 1e-3),
          ),
          { maxLength: 300 },
        ),
        (xs) => {
          const t = Float64Array.from(xs);
          const got = [...orderByTime(t)];
          const want = xs.map((_, i) => i).sort((a, b) => t[a]! - t[b]! || a - b);
          expect(got).toEqual(want);
        },
      ),
      { numRuns: 300 },
    );
  });
});
