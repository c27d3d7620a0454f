import { describe, expect, it } from '@jest/globals';
import { fixtures } from '../../support/session-fixture';

describe('timers beyond 2^31 ms (24.8 days)', () => {
  const fixture = fixtures();

  it('neither kill a task with timeoutS 3e6 at once nor end a pilot with runtimeMin 40000', async () => {
    // Node fires any delay over 2^31 - 1 ms after 1 ms: both used to end at once
    const fx = await fixture.open({ cores: 1, runtimeMin: 40_000 });
    const [t] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'sleep 0.3; echo slept'], timeoutS: 3e6 },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
    expect(t!.reason).toBeUndefined();
    expect([t!.state, t!.stdout?.trim()]).toEqual(['DONE', 'slept']);
    expect(fx.pilot.state).toBe('PMGR_ACTIVE');
  }, 30_000);

  it('are refused past their documented maximum, naming the path and the bound', async () => {
    const fx = await fixture.open({ cores: 1 });
    await expect(fx.tmgr.submitTasks([{ executable: '/bin/true', timeoutS: 4e7 }])).rejects.toThrow(
      '/0/timeoutS must be <= 31536000',
    );
    await expect(
      fx.pmgr.submitPilots([{ resource: 'local', cores: 1, runtimeMin: 6e5 }]),
    ).rejects.toThrow('/0/runtimeMin must be <= 525600');
  }, 30_000);
});
