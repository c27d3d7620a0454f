import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { ArrivalOrder } from '../../../../src/components/agent-input-stager/arrival-order';

const uids = (rs: readonly { uid: string }[]): string[] => rs.map((r) => r.uid);
const results = (...us: string[]) => us.map((uid) => ({ uid }));

describe('ArrivalOrder', () => {
  it('lets results through in arrival order, holding those that came early', () => {
    const o = new ArrivalOrder<{ uid: string }>();
    o.arrive(['a', 'b', 'c']);
    expect(uids(o.settle(results('b', 'c')))).toEqual([]);
    expect(o.waiting).toBe(3);
    expect(uids(o.settle(results('a')))).toEqual(['a', 'b', 'c']);
    expect(o.waiting).toBe(0);
  });

  it('passes results of tasks not in line at once, ahead of those released with them', () => {
    const o = new ArrivalOrder<{ uid: string }>();
    o.arrive(['a']);
    expect(uids(o.settle(results('a', 'free')))).toEqual(['free', 'a']);
    expect(uids(o.settle(results('a')))).toEqual(['a']); // a repeat: no longer in line
  });

  it('keeps the first place of a uid that arrives twice, and the first of two results', () => {
    const o = new ArrivalOrder<{ uid: string; n: number }>();
    o.arrive(['a', 'b']);
    o.arrive(['a']);
    expect(o.settle([{ uid: 'b', n: 1 }])).toEqual([]);
    expect(o.settle([{ uid: 'b', n: 2 }])).toEqual([]);
    expect(o.settle([{ uid: 'a', n: 1 }])).toEqual([
      { uid: 'a', n: 1 },
      { uid: 'b', n: 1 },
    ]);
    expect(o.waiting).toBe(0);
  });

  it('forgets the line on clear: later results pass at once', () => {
    const o = new ArrivalOrder<{ uid: string }>();
    o.arrive(['a', 'b']);
    o.settle(results('b'));
    o.clear();
    expect(o.waiting).toBe(0);
    expect(uids(o.settle(results('b', 'a')))).toEqual(['b', 'a']);
  });

  it('releases every result exactly once, in arrival order, for any completion order', () => {
    fc.assert(
      fc.property(
        // bulks of tasks, and the order their results come back in, a few at a time
        fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 300 }),
        fc.nat(),
        (bulks, step, seed) => {
          const o = new ArrivalOrder<{ uid: string }>();
          const all: string[] = [];
          bulks.forEach((n, b) => {
            const us = Array.from({ length: n }, (_, i) => `${b}.${i}`);
            o.arrive(us);
            all.push(...us);
          });
          // a deterministic shuffle, then delivery in slices
          const pending = [...all];
          let r = seed;
          for (let i = pending.length - 1; i > 0; i--) {
            r = (r * 1_103_515_245 + 12_345) % 2_147_483_648;
            const j = r % (i + 1);
            [pending[i], pending[j]] = [pending[j]!, pending[i]!];
          }
          const out: string[] = [];
          for (let i = 0; i < pending.length; i += step) {
            out.push(...uids(o.settle(results(...pending.slice(i, i + step)))));
          }
          expect(out).toEqual(all);
          expect(o.waiting).toBe(0);
        },
      ),
      { numRuns: 200, seed: 1_414 },
    );
  });
});
