import { expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describeSlurm, slurmEnv } from '../../support/slurm';
import { fixtures } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';

describeSlurm('function tasks on a 2-node Slurm pilot', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-slurm-fn-');

  it("run on the agent's node (its workers), executables on both", async () => {
    Object.assign(process.env, slurmEnv());
    const mod = path.join(temp.make(), 'twice.js');
    fs.writeFileSync(mod, 'exports.twice = (x) => 2 * x;\n');
    const fx = await fixture.open({ resource: 'slurm', nodes: 2, runtimeMin: 5 });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
    const tasks = await fx.tmgr.submitTasks([
      ...Array.from({ length: 40 }, (_, i) => ({
        mode: 'function' as const,
        function: { module: mod, export: 'twice', args: [i] },
      })),
      ...Array.from({ length: 20 }, () => ({
        executable: '/bin/sh',
        arguments: ['-c', 'sleep 0.2'],
      })),
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 120_000 });
    tasks.forEach((t, i) => {
      expect([t.state, t.reason?.message]).toEqual(['DONE', undefined]);
      if (i < 40) expect(t.result).toBe(2 * i);
    });
  }, 180_000);
});
