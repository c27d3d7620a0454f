import { expect, it } from '@jest/globals';
import { describeSlurm, slurmEnv } from '../../support/slurm';
import { fixtures } from '../../support/session-fixture';
import { runCli } from '../../support/cli';
import { cliFollowGatedPrinter, collect, followGatedPrinter } from '../../support/tail-check';
import { tempDirs } from '../../support/temp-dirs';

describeSlurm('tmgr.tail on a Slurm pilot', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-tail-slurm-');

  it.each(['stream', 'files'] as const)(
    "output '%s': follows a running task: the first line before it ends, then the rest, then ends",
    async (output) => {
      Object.assign(process.env, slurmEnv());
      const fx = await fixture.open({ resource: 'slurm', nodes: 1, runtimeMin: 5 });
      const uid = await followGatedPrinter(fx.tmgr, temp.make(), { output });
      expect(fx.tmgr.get(uid)!.output).toBe(output);
      expect(await collect(fx.tmgr.tail(uid))).toEqual(['first', 'second', 'third', 'partial']);
    },
    180_000,
  );

  it('pilotfish tail -f: the same through the command, reading the session directory', async () => {
    Object.assign(process.env, slurmEnv());
    const fx = await fixture.open({ resource: 'slurm', nodes: 1, runtimeMin: 5 });
    const args = await cliFollowGatedPrinter(fx, temp.make());
    expect((await runCli(['tail', ...args])).stdout).toBe('first\nsecond\nthird\npartial\n');
  }, 180_000);
});
