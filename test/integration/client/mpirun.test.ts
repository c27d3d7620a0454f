import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { fixtures } from '../../support/session-fixture';

const hasMpirun = (process.env.PATH ?? '')
  .split(':')
  .some((d) => d !== '' && fs.existsSync(`${d}/mpirun`));
const it_ = hasMpirun ? it : it.skip;
const SKIPPED = hasMpirun
  ? ''
  : ' (skipped: mpirun not installed; run scripts/system-deps.sh as root)';

describe(`a local pilot runs MPI tasks end to end${SKIPPED}`, () => {
  const fixture = fixtures();

  it_(
    'two 2-rank MPI tasks under mpirun print their ranks',
    async () => {
      const fx = await fixture.open({ cores: 4 });
      const show = 'echo rank=$PF_RANK of $PF_RANKS on $(hostname) gpus=$CUDA_VISIBLE_DEVICES';
      const tasks = await fx.tmgr.submitTasks(
        [1, 2].map(() => ({ ranks: 2, executable: '/bin/sh', arguments: ['-c', show] })),
      );
      await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
      for (const t of tasks) {
        expect(t.reason).toBeUndefined();
        expect(t.state).toBe('DONE');
        expect(t.stdout).toContain(`rank=0 of 2 on ${os.hostname()} gpus=\n`);
        expect(t.stdout).toContain(`rank=1 of 2 on ${os.hostname()} gpus=\n`);
      }
    },
    30_000,
  );
});

describe('a local pilot and multi-rank tasks', () => {
  const fixture = fixtures();

  it("fails a task of 2 ranks that asks for launch 'fork', saying to use mpirun", async () => {
    const fx = await fixture.open({ cores: 4 });
    const [t] = await fx.tmgr.submitTasks([{ ranks: 2, launch: 'fork', executable: '/bin/true' }]);
    await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
    expect(t!.state).toBe('FAILED');
    expect(t!.reason).toMatchObject({
      code: 'E_LAUNCH_METHOD',
      message: "launch 'fork' runs one rank; this task asks 2 ranks: use 'mpirun'",
      component: 'Executor',
    });
  }, 30_000);
});
