import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { syntheticProfile } from '../../../bench/synthetic-profile';
import type { AttemptProfile, Profile, SlotProfile } from '../../../src/profile/types';
import { BUCKETS, utilization } from '../../../src/profile/utilization';
import { attempt, pilot, task, type AttemptAt } from '../../support/profiles';

const NODES = [
  { name: 'a', cores: 3, gpus: 1 },
  { name: 'b', cores: 2, gpus: 0 },
];

/** Instants 0..60 s, any of them left out, in any order (a profile may say anything). */
const at: fc.Arbitrary<AttemptAt> = fc.record(
  {
    wait: fc.integer({ min: 0, max: 60 }),
    alloc: fc.integer({ min: 0, max: 60 }),
    exec: fc.integer({ min: 0, max: 60 }),
    launched: fc.double({ min: 0, max: 60, noNaN: true }),
    exited: fc.double({ min: 0, max: 60, noNaN: true }),
    release: fc.integer({ min: 0, max: 60 }),
    end: fc.integer({ min: 0, max: 60 }),
  },
  { requiredKeys: [] },
);

/** Slots on the known nodes, with an index past a node's end now and then. */
const slots: fc.Arbitrary<SlotProfile[]> = fc.array(
  fc.record({
    node: fc.constantFrom('a', 'b', 'zz'),
    cores: fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { maxLength: 3 }),
    gpus: fc.uniqueArray(fc.integer({ min: 0, max: 1 }), { maxLength: 1 }),
  }),
  { maxLength: 2 },
);

const attemptArb: fc.Arbitrary<AttemptProfile> = fc
  .tuple(fc.constantFrom('p1', 'p2'), at, fc.option(slots, { nil: undefined }))
  .map(([p, times, sl]) => attempt(p, times, sl));

const pilotAt = fc.record(
  {
    job: fc.integer({ min: 0, max: 30 }),
    pending: fc.integer({ min: 0, max: 30 }),
    active: fc.integer({ min: 0, max: 40 }),
    drain: fc.integer({ min: 0, max: 70 }),
    end: fc.integer({ min: 20, max: 70 }),
  },
  { requiredKeys: [] },
);

const profileArb: fc.Arbitrary<Profile> = fc
  .tuple(
    pilotAt,
    pilotAt,
    fc.boolean(),
    fc.array(fc.array(attemptArb, { minLength: 1, maxLength: 3 }), { maxLength: 25 }),
  )
  .map(([a1, a2, listed, attempts]) => ({
    session: 'pf.prop',
    readAt: 1_700_000_000_000 + 65_000,
    pilots: [pilot('p1', listed ? NODES : undefined, a1), pilot('p2', NODES, a2)],
    tasks: attempts.map((as, i) => task(`t${i}`, ...as)),
  }));

describe('utilization (property)', () => {
  it('puts every core- and GPU-second in exactly one bucket, none negative', () => {
    fc.assert(
      fc.property(profileArb, (p) => {
        for (const r of utilization(p).pilots) {
          for (const acc of [r.coreSeconds, r.gpuSeconds]) {
            const sum = BUCKETS.reduce((x, b) => x + acc[b], 0);
            expect(Math.abs(sum - acc.total)).toBeLessThanOrEqual(1e-9 * Math.max(acc.total, 1));
            for (const b of BUCKETS) expect(acc[b]).toBeGreaterThanOrEqual(-1e-9);
          }
          expect(r.check.ok).toBe(true);
          if (r.utilization !== null) expect(r.utilization).toBeLessThanOrEqual(1 + 1e-12);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('adds up on a generated session of 20,000 tasks of mixed widths', () => {
    const p = syntheticProfile({
      tasks: 20_000,
      nodes: [
        { cores: 32, gpus: 2 },
        { cores: 8, gpus: 0 },
      ],
      gpuEvery: 7,
    });
    const [r] = utilization(p).pilots;
    expect(r!.check.ok).toBe(true);
    expect(r!.utilization).toBeGreaterThan(0.2); // tasks alternate between a wide and a narrow node
    expect(r!.gpuUtilization).toBeGreaterThan(0);
  });
});
