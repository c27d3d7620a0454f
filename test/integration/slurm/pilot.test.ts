import { expect, it } from '@jest/globals';
import { describeSlurm, slurmEnv } from '../../support/slurm';
import { fixtures } from '../../support/session-fixture';

describeSlurm('a 2-node Slurm pilot', () => {
  const fixture = fixtures();

  it('runs 200 tasks, 2-rank ones spanning both nodes through srun', async () => {
    Object.assign(process.env, slurmEnv());
    const t0 = Date.now();
    const fx = await fixture.open({ resource: 'slurm', nodes: 2, runtimeMin: 5 });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    const startupMs = Date.now() - t0;
    process.stderr.write(`slurm pilot: submitPilots to PMGR_ACTIVE in ${startupMs} ms\n`);
    const show = 'echo "rank=$PF_RANK of $PF_RANKS on $(hostname)"';
    const tasks = await fx.tmgr.submitTasks([
      ...Array.from({ length: 190 }, () => ({ executable: '/bin/true' })),
      // each node has 2 cores: two ranks of 2 cores each can only run one per node
      ...Array.from({ length: 10 }, () => ({
        ranks: 2,
        coresPerRank: 2,
        executable: '/bin/sh',
        arguments: ['-c', show],
      })),
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 120_000 });
    for (const t of tasks) {
      expect(t.reason).toBeUndefined();
      expect(t.state).toBe('DONE');
    }
    for (const t of tasks.slice(190)) {
      const lines = (t.stdout ?? '').trim().split('\n').sort();
      expect(lines).toHaveLength(2);
      const hosts = lines.map((l) => /on (\S+)$/.exec(l)?.[1]);
      expect(lines[0]).toMatch(/^rank=0 of 2 on n[12]$/);
      expect(lines[1]).toMatch(/^rank=1 of 2 on n[12]$/);
      expect(new Set(hosts).size).toBe(2);
    }
  }, 180_000);

  it('ends DONE at its runtime limit, ending the tasks it still ran', async () => {
    Object.assign(process.env, slurmEnv());
    const fx = await fixture.open({ resource: 'slurm', nodes: 1, runtimeMin: 0.05 });
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/sleep', arguments: ['60'] }]);
    await fx.pmgr.waitPilots({ timeoutMs: 60_000 });
    await fx.tmgr.waitTasks({ timeoutMs: 10_000 });
    expect(fx.pilot.state).toBe('DONE');
    expect(fx.pilot.reason?.message).toContain('runtime limit');
    expect(t!.state).toBe('FAILED');
    expect(t!.reason?.code).toBe('E_PILOT_ENDED');
  }, 90_000);
});
