import { describe, expect, it } from '@jest/globals';
import { LivenessWatch, MissCount } from '../../../../../src/components/executor/service/liveness';
import { livenessOf } from '../../../../../src/components/executor/kinds/service';
import { FakeClock } from '../../../../support/fake-clock';

/** Lets the probe's promise and the watch's continuation run. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

/**
 * A watch on a fake clock whose probe answers from `answers` in turn (true: answered), and
 * records each probe's start time and the unhealthy call.
 */
function watched(answers: boolean[], policy = { intervalMs: 1_000, failures: 3 }) {
  const clock = new FakeClock(0);
  const probes: number[] = [];
  const unhealthy: number[] = [];
  const pending: ((ok: boolean) => void)[] = [];
  const probe = (): Promise<boolean> => {
    probes.push(clock.now());
    const next = answers.shift();
    if (next !== undefined) return Promise.resolve(next);
    return new Promise((resolve) => pending.push(resolve)); // answers when the test says
  };
  const watch = new LivenessWatch(policy, clock, probe, (m) => unhealthy.push(m));
  return { clock, probes, unhealthy, pending, watch };
}

describe('MissCount', () => {
  it('is unhealthy only after `failures` misses in a row; an answer starts the count again', () => {
    const c = new MissCount(2);
    expect([c.onProbe(false), c.onProbe(true), c.onProbe(false)]).toEqual([
      'missed',
      'healthy',
      'missed',
    ]);
    expect(c.onProbe(false)).toBe('unhealthy');
    expect(c.inARow).toBe(2);
  });
});

describe('LivenessWatch', () => {
  it('probes every interval and reports unhealthy once, after 3 misses in a row, with the misses', async () => {
    const { clock, probes, unhealthy } = watched([true, false, true, false, false, false, true]);
    for (let i = 0; i < 10; i++) {
      clock.advance(1_000);
      await settle();
    }
    expect(probes).toEqual([1_000, 2_000, 3_000, 4_000, 5_000, 6_000]);
    expect(unhealthy).toEqual([3]);
  });

  it('starts the next probe an interval after the last one ended: a slow answer piles nothing up', async () => {
    const { clock, probes, pending } = watched([]);
    clock.advance(1_000);
    await settle();
    clock.advance(5_000); // the first probe hangs for 5 s: no second one starts meanwhile
    expect(probes).toEqual([1_000]);
    pending.shift()!(true);
    await settle();
    clock.advance(999);
    expect(probes).toEqual([1_000]);
    clock.advance(1);
    expect(probes).toEqual([1_000, 7_000]);
  });

  it('probes no more once stopped, even when a probe under way answers a miss after', async () => {
    const { clock, probes, unhealthy, pending, watch } = watched([], {
      intervalMs: 100,
      failures: 1,
    });
    clock.advance(100);
    watch.stop();
    pending.shift()!(false);
    await settle();
    clock.advance(1_000);
    expect([probes, unhealthy]).toEqual([[100], []]);
  });

  it('counts a probe that throws as a miss', async () => {
    const clock = new FakeClock(0);
    const unhealthy: number[] = [];
    new LivenessWatch(
      { intervalMs: 10, failures: 1 },
      clock,
      () => Promise.reject(new Error('EMFILE')),
      (m) => unhealthy.push(m),
    );
    clock.advance(10);
    await settle();
    expect(unhealthy).toEqual([1]);
  });
});

describe('livenessOf (the defaults)', () => {
  it('probes the path the service was ready on, else a TCP connect, every 10 s, 3 misses, 2 s each', () => {
    const d = { intervalMs: 10_000, failures: 3, timeoutMs: 2_000 };
    expect(livenessOf({ port: 'auto', ready: { http: '/health' } })).toEqual({
      http: '/health',
      ...d,
    });
    expect(livenessOf({ port: 80 })).toEqual({ tcp: true, ...d });
    expect(livenessOf({ ready: { pattern: 'up' } })).toBeUndefined(); // no port: nothing to probe
    expect(livenessOf({ port: 80, liveness: false })).toBeUndefined();
    expect(
      livenessOf({
        port: 80,
        liveness: { http: '/up', intervalS: 0.5, failures: 1, timeoutS: 0.2 },
      }),
    ).toEqual({ http: '/up', intervalMs: 500, failures: 1, timeoutMs: 200 });
  });
});
