import { describe, expect, it } from '@jest/globals';
import {
  RANK_WRAPPER,
  SRUN_GRES_RANK_WRAPPER,
  SRUN_RANK_WRAPPER,
  buildLaunch,
  launchMethodOf,
  type BuildLaunchOptions,
  type Launch,
  type SlurmLaunchOptions,
} from '../../../../src/components/executor/launch';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';

type Slot = NonNullable<TaskRecord['slots']>[number];

const OPTS: BuildLaunchOptions = { mpirun: '/usr/bin/mpirun', asRoot: false, workDir: '/sb/t1' };

function task(desc: Partial<TaskDescription>, slots?: Slot[]): TaskRecord {
  const t: TaskRecord = {
    uid: 't1',
    attempt: 1,
    state: 'AGENT_EXECUTING_PENDING',
    session: 'sess.1',
    pilot: 'pilot.1',
    sandbox: '/sb/t1',
    description: { executable: '/bin/app', arguments: ['a b', "it's"], ...desc },
  };
  if (slots !== undefined) t.slots = slots;
  return t;
}

function slot(node: string, cores: number[], gpus: number[] = []): Slot {
  return { node, cores, gpus };
}

function launched(t: TaskRecord, opts: BuildLaunchOptions = OPTS): Launch {
  const r = buildLaunch(t, opts);
  if (!r.ok) throw new Error(`unexpected failure: ${r.reason.message}`);
  return r.launch;
}

/** The mpirun options before the wrapped command, as written. */
function mpirunOptions(l: Launch): string[] {
  return l.args.slice(0, l.args.indexOf('/bin/sh'));
}

const BASE_ENV = {
  PF_TASK_ID: 't1',
  PF_PILOT_ID: 'pilot.1',
  PF_SESSION_ID: 'sess.1',
  PF_TASK_SANDBOX: '/sb/t1',
};

describe('launchMethodOf', () => {
  it.each([
    [{}, 'fork'],
    [{ ranks: 1 }, 'fork'],
    [{ ranks: 2 }, 'mpirun'],
    [{ ranks: 1, launch: 'mpirun' as const }, 'mpirun'],
    [{ ranks: 4, launch: 'fork' as const }, 'fork'],
  ])('picks the launch method of %j: %s', (desc, method) => {
    expect(launchMethodOf(task(desc))).toBe(method);
  });
});

describe('launchMethodOf inside a Slurm allocation', () => {
  const SLURM: SlurmLaunchOptions = { srun: 'srun', node: 'n1' };

  it.each([
    ['one rank on the agent node', {}, [slot('n1', [0])], 'fork'],
    ['one rank without a slot', {}, undefined, 'fork'],
    ['one rank on another node', {}, [slot('n2', [0])], 'srun'],
    ['two ranks on the agent node', { ranks: 2 }, [slot('n1', [0]), slot('n1', [1])], 'srun'],
    ['two ranks on two nodes', { ranks: 2 }, [slot('n1', [0]), slot('n2', [0])], 'srun'],
    ['an explicit mpirun', { ranks: 2, launch: 'mpirun' as const }, [slot('n2', [0])], 'mpirun'],
    ['an explicit srun on the agent node', { launch: 'srun' as const }, [slot('n1', [0])], 'srun'],
    ['an explicit fork', { launch: 'fork' as const }, [slot('n2', [0])], 'fork'],
  ])('picks for %s: %s', (_what, desc, slots, method) => {
    expect(launchMethodOf(task(desc, slots), SLURM)).toBe(method);
  });
});

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

describe('buildLaunch with mpirun', () => {
  it('places rank i on the node of slot i through a hostfile read in sequence', () => {
    const slots = [slot('n1', [0]), slot('n2', [0]), slot('n1', [1]), slot('n2', [1])];
    const l = launched(task({ ranks: 4 }, slots));
    expect(l.method).toBe('mpirun');
    expect(l.executable).toBe('/usr/bin/mpirun');
    expect(l.files).toEqual([
      {
        path: '/sb/t1/mpi-hostfile',
        content:
          '# pilotfish task t1: line i is the host of rank i (mpirun --map-by seq)\n' +
          'n1\nn2\nn1\nn2\n',
      },
    ]);
    expect(mpirunOptions(l).slice(0, 8)).toEqual([
      '-np',
      '4',
      '--hostfile',
      '/sb/t1/mpi-hostfile',
      '--map-by',
      'seq',
      '--bind-to',
      'none',
    ]);
  });

  it('lists a node once per rank it holds when ranks share a node', () => {
    const slots = [slot('gpu7', [0, 1], [0]), slot('gpu7', [2, 3], [1])];
    const l = launched(task({ ranks: 2 }, slots));
    expect(l.files[0]?.content.split('\n').slice(1)).toEqual(['gpu7', 'gpu7', '']);
    expect(mpirunOptions(l)).not.toContain('--oversubscribe'); // k lines = k slots on the host
  });

  it('wraps the command so each rank sets its own variables, arguments untouched', () => {
    const l = launched(task({ ranks: 2 }, [slot('n0', [0]), slot('n0', [1])]));
    expect(l.args.slice(l.args.indexOf('/bin/sh'))).toEqual([
      '/bin/sh',
      '-c',
      RANK_WRAPPER,
      'pf-rank',
      '/bin/app',
      'a b',
      "it's",
    ]);
  });

  it('passes the GPU table of every rank, and no per-rank value, to mpirun', () => {
    const slots = [slot('n0', [0], [0, 1]), slot('n0', [1], []), slot('n1', [0], [2, 3])];
    const t = task({ ranks: 3, environment: { FOO: 'x', PF_RANK: '9', PF_GPUS: '9' } }, slots);
    const l = launched(t);
    expect(l.env).toEqual({
      FOO: 'x',
      ...BASE_ENV,
      PF_RANKS: '3',
      PF_RANK_GPUS: '0,1;;2,3',
    });
  });

  it('exports every variable it sets to the ranks on every node with -x', () => {
    const l = launched(
      task({ ranks: 2, environment: { FOO: 'x' } }, [slot('a', []), slot('b', [])]),
    );
    const exported = mpirunOptions(l).flatMap((a, i, all) => (all[i - 1] === '-x' ? [a] : []));
    expect(exported).toEqual(Object.keys(l.env).sort());
    expect(exported).toEqual([
      'FOO',
      'PF_PILOT_ID',
      'PF_RANKS',
      'PF_RANK_GPUS',
      'PF_SESSION_ID',
      'PF_TASK_ID',
      'PF_TASK_SANDBOX',
    ]);
  });

  it('adds --allow-run-as-root only when the agent runs as root', () => {
    const t = task({ ranks: 2 }, [slot('n0', [0]), slot('n0', [1])]);
    expect(launched(t, { ...OPTS, asRoot: true }).args[0]).toBe('--allow-run-as-root');
    expect(launched(t).args).not.toContain('--allow-run-as-root');
  });

  it('runs a single rank under mpirun when asked', () => {
    const l = launched(task({ launch: 'mpirun' }, [slot('n0', [0], [5])]));
    expect(mpirunOptions(l).slice(0, 2)).toEqual(['-np', '1']);
    expect(l.env.PF_RANK_GPUS).toBe('5');
  });

  it.each([
    ['no slots', undefined, 'holds 0 slots'],
    ['fewer slots than ranks', [slot('n0', [0])], 'holds 1 slots'],
  ])('fails a task with %s', (_what, slots, text) => {
    const r = buildLaunch(task({ ranks: 2 }, slots), OPTS);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.reason.code).toBe('E_LAUNCH_SLOTS');
    expect(r.reason.message).toBe(
      `launch 'mpirun' needs one slot per rank: this task asks 2 ranks but ${text}`,
    );
  });

  it('fails a node name that a hostfile cannot hold', () => {
    const r = buildLaunch(task({ ranks: 1, launch: 'mpirun' }, [slot('bad host', [0])]), OPTS);
    expect(r.ok ? undefined : r.reason.code).toBe('E_LAUNCH_SLOTS');
  });
});

describe('buildLaunch with srun', () => {
  const SLURM: BuildLaunchOptions = { ...OPTS, slurm: { srun: '/usr/bin/srun', node: 'n1' } };
  const GRES: BuildLaunchOptions = { ...SLURM, slurm: { ...SLURM.slurm!, gpuGres: true } };

  /** The srun options before the wrapped command, as written. */
  function srunOptions(l: Launch): string[] {
    return l.args.slice(0, l.args.indexOf('/bin/sh'));
  }

  it('runs a step with one hostfile line per rank, in rank order', () => {
    const slots = [slot('n2', [0, 1]), slot('n1', [0, 1]), slot('n2', [2, 3])];
    const l = launched(task({ ranks: 3 }, slots), SLURM);
    expect(l.method).toBe('srun');
    expect(l.executable).toBe('/usr/bin/srun');
    // Kills go to srun alone: its shepherd child must outlive it to cancel the step.
    expect(l.killScope).toBe('process');
    expect(l.files).toEqual([
      {
        path: '/sb/t1/slurm-hostfile',
        content:
          '# pilotfish task t1: line i is the node of rank i (srun --distribution=arbitrary)\n' +
          'n2\nn1\nn2\n',
      },
    ]);
    expect(srunOptions(l)).toEqual([
      '--job-name=t1',
      '--nodes=2',
      '--ntasks=3',
      '--cpus-per-task=2',
      '--distribution=arbitrary',
      '--exact',
      '--mem=0',
      '--kill-on-bad-exit=1',
      '--export=ALL',
    ]);
    // No --nodelist: with SLURM_HOSTFILE it would override the hostfile's order.
    expect(l.args.some((a) => a.startsWith('--nodelist'))).toBe(false);
  });

  it('wraps the command so each rank reads SLURM_PROCID, arguments untouched', () => {
    const l = launched(task({ ranks: 2 }, [slot('n1', [0]), slot('n2', [0])]), SLURM);
    expect(l.args.slice(l.args.indexOf('/bin/sh'))).toEqual([
      '/bin/sh',
      '-c',
      SRUN_RANK_WRAPPER,
      'pf-rank',
      '/bin/app',
      'a b',
      "it's",
    ]);
    expect(SRUN_RANK_WRAPPER).toContain('${SLURM_PROCID:?');
    expect(SRUN_RANK_WRAPPER).not.toContain('OMPI_COMM_WORLD_RANK');
  });

  it('passes the hostfile, the GPU table of every rank and no per-rank value to srun', () => {
    const slots = [slot('n1', [0], [0, 1]), slot('n2', [0], []), slot('n2', [1], [2, 3])];
    const t = task({ ranks: 3, environment: { FOO: 'x', PF_RANK: '9', PF_GPUS: '9' } }, slots);
    const l = launched(t, SLURM);
    expect(l.env).toEqual({
      FOO: 'x',
      ...BASE_ENV,
      PF_RANKS: '3',
      PF_RANK_GPUS: '0,1;;2,3',
      SLURM_HOSTFILE: '/sb/t1/slurm-hostfile',
    });
    // Without GPU GRES Slurm is asked for no GPU: the wrapper sets them from the slots.
    expect(srunOptions(l).some((a) => a.startsWith('--gpus'))).toBe(false);
  });

  it('asks memory per CPU, rounded up, only when the task asks memory', () => {
    const slots = [slot('n1', [0, 1, 2]), slot('n2', [0, 1, 2])];
    const l = launched(task({ ranks: 2, memPerRankMb: 1000 }, slots), SLURM);
    expect(srunOptions(l)).toContain('--mem-per-cpu=334');
    expect(srunOptions(l)).not.toContain('--mem=0');
  });

  it('asks GPUs per rank from Slurm when they are GRES, and keeps the CUDA_VISIBLE_DEVICES Slurm sets', () => {
    const slots = [slot('n1', [0], [0, 1]), slot('n2', [0], [2, 3])];
    const l = launched(task({ ranks: 2 }, slots), GRES);
    expect(srunOptions(l)).toContain('--gpus-per-task=2');
    expect(l.args).toContain(SRUN_GRES_RANK_WRAPPER);
    expect(SRUN_GRES_RANK_WRAPPER).not.toContain('CUDA_VISIBLE_DEVICES');
    expect(l.env.PF_RANK_GPUS).toBe('0,1;2,3');
  });

  it('asks no GPU from Slurm for a task without GPUs, GRES or not', () => {
    const l = launched(task({ ranks: 2 }, [slot('n1', [0]), slot('n2', [0])]), GRES);
    expect(srunOptions(l).some((a) => a.startsWith('--gpus'))).toBe(false);
  });

  it('runs a single rank on another node as a one-node step', () => {
    const l = launched(task({}, [slot('n2', [3])]), SLURM);
    expect(l.method).toBe('srun');
    expect(srunOptions(l).slice(1, 4)).toEqual(['--nodes=1', '--ntasks=1', '--cpus-per-task=1']);
    expect(l.files[0]?.content.split('\n').slice(1)).toEqual(['n2', '']);
  });

  it('forks a single rank on the agent node', () => {
    const l = launched(task({ arguments: [] }, [slot('n1', [0], [1])]), SLURM);
    expect(l).toMatchObject({ method: 'fork', executable: '/bin/app', files: [] });
    expect(l.env).toMatchObject({ PF_RANK: '0', CUDA_VISIBLE_DEVICES: '1' });
  });

  it('fails srun outside a Slurm allocation, naming the other methods', () => {
    const r = buildLaunch(task({ launch: 'srun' }, [slot('n1', [0])]), OPTS);
    expect(r).toEqual({
      ok: false,
      reason: {
        code: 'E_LAUNCH_METHOD',
        message:
          "launch 'srun' starts a step of the Slurm allocation the agent runs in, and this agent runs outside Slurm: use 'fork' or 'mpirun'",
        component: 'Executor',
        detail: { launch: 'srun' },
      },
    });
  });

  it('fails a fork whose slot is on another node than the agent', () => {
    const r = buildLaunch(task({ launch: 'fork' }, [slot('n2', [0])]), SLURM);
    expect(r.ok ? undefined : r.reason).toMatchObject({
      code: 'E_LAUNCH_METHOD',
      message:
        "launch 'fork' runs on the agent's node 'n1'; this task's slot is on 'n2': use 'srun'",
    });
  });

  it('names srun when a multi-rank fork is refused inside Slurm', () => {
    const r = buildLaunch(task({ ranks: 2, launch: 'fork' }), SLURM);
    expect(r.ok ? undefined : r.reason.message).toBe(
      "launch 'fork' runs one rank; this task asks 2 ranks: use 'srun'",
    );
  });

  it.each([
    ['fewer slots than ranks', { ranks: 2 }, [slot('n1', [0])], 'needs one slot per rank'],
    ['a node name with a comma', {}, [slot('n2,n3', [0])], "cannot place a rank on node 'n2,n3'"],
    ['uneven cores', { ranks: 2 }, [slot('n1', [0]), slot('n2', [0, 1])], '1 or 2 cores'],
  ])('fails a task with %s', (_what, desc, slots, text) => {
    const r = buildLaunch(task({ launch: 'srun', ...desc }, slots), SLURM);
    expect(r.ok ? undefined : r.reason.code).toBe('E_LAUNCH_SLOTS');
    expect(r.ok ? '' : r.reason.message).toContain(text);
  });

  it('fails uneven GPUs only when Slurm hands out the GPUs', () => {
    const slots = [slot('n1', [0], [0]), slot('n2', [0], [])];
    expect(buildLaunch(task({ ranks: 2 }, slots), SLURM).ok).toBe(true);
    const r = buildLaunch(task({ ranks: 2 }, slots), GRES);
    expect(r.ok ? undefined : r.reason.code).toBe('E_LAUNCH_SLOTS');
  });
});
