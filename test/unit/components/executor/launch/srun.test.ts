import { describe, expect, it } from '@jest/globals';
import {
  SRUN_GRES_RANK_WRAPPER,
  SRUN_RANK_WRAPPER,
  buildLaunch,
  type BuildLaunchOptions,
} from '../../../../../src/components/executor/launch';
import { OPTS, task, slot, launched, BASE_ENV, launcherOptions } from './helpers';

describe('buildLaunch with srun', () => {
  const SLURM: BuildLaunchOptions = {
    ...OPTS,
    agentNode: { name: 'n1' },
    srun: { executable: '/usr/bin/srun' },
  };
  const GRES: BuildLaunchOptions = { ...SLURM, srun: { ...SLURM.srun!, gpuGres: true } };

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
    expect(launcherOptions(l)).toEqual([
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
      OMP_NUM_THREADS: '1',
      PF_RANKS: '3',
      PF_RANK_GPUS: '0,1;;2,3',
      SLURM_HOSTFILE: '/sb/t1/slurm-hostfile',
    });
    // Without GPU GRES Slurm is asked for no GPU: the wrapper sets them from the slots.
    expect(launcherOptions(l).some((a) => a.startsWith('--gpus'))).toBe(false);
  });

  it('asks memory per CPU, rounded up, only when the task asks memory', () => {
    const slots = [slot('n1', [0, 1, 2]), slot('n2', [0, 1, 2])];
    const l = launched(task({ ranks: 2, memPerRankMb: 1000 }, slots), SLURM);
    expect(launcherOptions(l)).toContain('--mem-per-cpu=334');
    expect(launcherOptions(l)).not.toContain('--mem=0');
  });

  it('asks GPUs per rank from Slurm when they are GRES, and keeps the CUDA_VISIBLE_DEVICES Slurm sets', () => {
    const slots = [slot('n1', [0], [0, 1]), slot('n2', [0], [2, 3])];
    const l = launched(task({ ranks: 2 }, slots), GRES);
    expect(launcherOptions(l)).toContain('--gpus-per-task=2');
    expect(l.args).toContain(SRUN_GRES_RANK_WRAPPER);
    expect(SRUN_GRES_RANK_WRAPPER).not.toContain('CUDA_VISIBLE_DEVICES');
    expect(l.env.PF_RANK_GPUS).toBe('0,1;2,3');
  });

  it('asks no GPU from Slurm for a task without GPUs, GRES or not', () => {
    const l = launched(task({ ranks: 2 }, [slot('n1', [0]), slot('n2', [0])]), GRES);
    expect(launcherOptions(l).some((a) => a.startsWith('--gpus'))).toBe(false);
  });

  it('runs a single rank on another node as a one-node step, named, without a hostfile', () => {
    const l = launched(task({}, [slot('n2', [3])]), SLURM);
    expect(l.method).toBe('srun');
    expect(launcherOptions(l).slice(1, 5)).toEqual([
      '--nodes=1',
      '--ntasks=1',
      '--cpus-per-task=1',
      '--nodelist=n2',
    ]);
    expect(launcherOptions(l)).not.toContain('--distribution=arbitrary');
    // no file per task: output 'stream' leaves nothing in the pilot's sandbox for it
    expect(l.files).toEqual([]);
    expect(l.env.SLURM_HOSTFILE).toBeUndefined();
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

  it("adds the pilot's PMI plug-in, unless the task's environment names one", () => {
    const MPI: BuildLaunchOptions = { ...SLURM, srun: { ...SLURM.srun!, mpi: 'pmix' } };
    const slots = [slot('n1', [0]), slot('n2', [0])];
    const l = launched(task({ ranks: 2 }, slots), MPI);
    expect(launcherOptions(l)).toContain('--mpi=pmix');
    expect(launcherOptions(l).indexOf('--mpi=pmix')).toBeLessThan(
      launcherOptions(l).indexOf('--kill-on-bad-exit=1'),
    );
    // srun reads SLURM_MPI_TYPE itself: the task's choice wins
    const own = launched(task({ ranks: 2, environment: { SLURM_MPI_TYPE: 'none' } }, slots), MPI);
    expect(launcherOptions(own).some((a) => a.startsWith('--mpi'))).toBe(false);
    expect(own.env.SLURM_MPI_TYPE).toBe('none');
    // no choice (Slurm's MpiDefault): no option
    expect(
      launcherOptions(launched(task({ ranks: 2 }, slots), SLURM)).some((a) =>
        a.startsWith('--mpi'),
      ),
    ).toBe(false);
  });
});
