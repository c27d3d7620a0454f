import { describe, expect, it } from '@jest/globals';
import { fixtures } from '../../support/session-fixture';

describe('tasks whose every pilot has ended', () => {
  const fixture = fixtures();

  it('fail with a reason instead of waiting forever: a pilot that fails at launch', async () => {
    const fx = await fixture.open({ resource: 'pbs', cores: 1 }, false);
    // added after the launch failed or before it: either way no pilot is left
    const early = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    fx.tmgr.addPilots([fx.pilot]);
    await fx.pmgr.waitPilots({ timeoutMs: 10_000 });
    expect(fx.pilot.state).toBe('FAILED');
    const late = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    await fx.tmgr.waitTasks({ timeoutMs: 10_000 });
    for (const t of [...early, ...late]) {
      expect([t.state, t.reason?.code]).toEqual(['FAILED', 'E_NO_PILOT']);
      expect(t.reason?.message).toContain(`${fx.pilot.uid} (FAILED)`);
    }
  }, 20_000);
});
