import { expect, it } from '@jest/globals';
import { describeSlurm, slurmEnv } from '../../support/slurm';
import { fixtures } from '../../support/session-fixture';
import { collect, followGatedPrinter } from '../../support/tail-check';
import { tempDirs } from '../../support/temp-dirs';

describeSlurm('tmgr.tail on a Slurm pilot', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-tail-slurm-');

  it('follows a running task: the first line before it ends, then the rest, then ends', async () => {
    Object.assign(process.env, slurmEnv());
    const fx = await fixture.open({ resource: 'slurm', nodes: 1, runtimeMin: 5 });
    const uid = await followGatedPrinter(fx.tmgr, temp.make());
    expect(await collect(fx.tmgr.tail(uid))).toEqual(['first', 'second', 'third', 'partial']);
  }, 180_000);
});
