import { expect, it } from '@jest/globals';
import { describeSlurm, slurmEnv } from '../../support/slurm';
import { fixtures } from '../../support/session-fixture';

describeSlurm('a Slurm pilot whose job ends before its runtimeMin', () => {
  const fixture = fixtures();

  it('reads its end from the job (scontrol EndTime) and places tasks by the time left', async () => {
    Object.assign(process.env, slurmEnv());
    // the job gets 3 minutes (a later --time wins), the pilot asks 30: the job's end binds
    const fx = await fixture.open({
      resource: 'slurm',
      nodes: 1,
      runtimeMin: 30,
      directives: ['--time=00:03:00'],
    });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
    const [long, short] = await fx.tmgr.submitTasks([
      { name: 'long', executable: '/bin/true', walltimeS: 300 },
      { name: 'short', executable: '/bin/true', walltimeS: 30 },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect(short!.state).toBe('DONE');
    expect([long!.state, long!.reason?.code]).toEqual(['FAILED', 'E_NO_PILOT_TIME']);
    // 3 minutes less the minute the agent keeps for its own shutdown, less the start-up
    const left = Number(/\(pilot\.\d+: (\d+) s\)$/.exec(long!.reason!.message)?.[1]);
    expect(left).toBeGreaterThan(60);
    expect(left).toBeLessThanOrEqual(120);
  }, 120_000);
});
