import { describe, expect, it } from '@jest/globals';
import { buildLaunch } from '../../../../../src/components/executor/launch';
import { OPTS, task, slot, launched, BASE_ENV } from './helpers';

describe('buildLaunch with fork', () => {
  it('runs the executable itself with the rank variables and the slot GPUs set directly', () => {
    const l = launched(task({ environment: { FOO: 'bar' } }, [slot('n0', [0], [3])]));
    expect(l).toEqual({
      method: 'fork',
      executable: '/bin/app',
      args: ['a b', "it's"],
      env: {
        FOO: 'bar',
        ...BASE_ENV,
        OMP_NUM_THREADS: '1',
        PF_RANKS: '1',
        PF_RANK: '0',
        PF_GPUS: '3',
        CUDA_VISIBLE_DEVICES: '3',
      },
      files: [],
    });
  });

  it('hides every GPU from a task whose slot has none, whatever its environment says', () => {
    const t = task({ arguments: [], environment: { CUDA_VISIBLE_DEVICES: '0', PF_RANK: '7' } }, [
      slot('n0', [0, 1]),
    ]);
    const l = launched(t);
    expect(l.args).toEqual([]);
    expect(l.env).toMatchObject({ CUDA_VISIBLE_DEVICES: '', PF_GPUS: '', PF_RANK: '0' });
  });

  it("sets OMP_NUM_THREADS to the rank's cores, unless the task's environment sets it", () => {
    const slots = [slot('n0', [0, 1, 2, 3])];
    expect(launched(task({ coresPerRank: 4 }, slots)).env.OMP_NUM_THREADS).toBe('4');
    const own = task({ coresPerRank: 4, environment: { OMP_NUM_THREADS: '2' } }, slots);
    expect(launched(own).env.OMP_NUM_THREADS).toBe('2');
  });

  it('needs no slots (a task without them sees no GPUs)', () => {
    expect(launched(task({})).env.CUDA_VISIBLE_DEVICES).toBe('');
  });

  it('rejects more than one rank with a reason naming mpirun', () => {
    const r = buildLaunch(task({ ranks: 3, launch: 'fork' }), OPTS);
    expect(r).toEqual({
      ok: false,
      reason: {
        code: 'E_LAUNCH_METHOD',
        message: "launch 'fork' runs one rank; this task asks 3 ranks: use 'mpirun'",
        component: 'Executor',
        detail: { launch: 'fork', ranks: 3 },
      },
    });
  });
});
