import { describe, expect, it } from '@jest/globals';
import { probeIntervalMs } from '../../../../../src/components/executor/service/service-probe';

describe('how often readiness is checked', () => {
  it('is a tenth of the time since the start, from 10 ms to 500 ms', () => {
    expect([0, 50, 100, 300, 1_000, 5_000, 60_000].map(probeIntervalMs)).toEqual([
      10, 10, 10, 30, 100, 500, 500,
    ]);
  });

  it('sees a service ready within about a tenth of its start-up, at a few dozen checks', () => {
    const checks = (readyAtMs: number): { seenAt: number; count: number } => {
      let t = 0;
      let count = 0;
      for (;;) {
        count++;
        if (t >= readyAtMs) return { seenAt: t, count };
        t += probeIntervalMs(t);
      }
    };
    for (const load of [300, 2_000, 30_000]) {
      const { seenAt } = checks(load);
      expect(seenAt - load).toBeLessThanOrEqual(Math.max(10, Math.min(500, load / 10 + 10)));
    }
    expect(checks(5_000).count).toBeLessThan(60);
  });
});
