import { describe, expect, it } from '@jest/globals';
import { RANK_WRAPPER, buildLaunch } from '../../../../../src/components/executor/launch';
import { OPTS, task, slot, launched, launcherOptions, BASE_ENV } from './helpers';

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
    expect(launcherOptions(l).slice(0, 8)).toEqual([
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
    expect(launcherOptions(l)).not.toContain('--oversubscribe'); // k lines = k slots on the host
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
      OMP_NUM_THREADS: '1',
      PF_RANKS: '3',
      PF_RANK_GPUS: '0,1;;2,3',
    });
  });

  it('exports every variable it sets to the ranks on every node with -x', () => {
    const l = launched(
      task({ ranks: 2, environment: { FOO: 'x' } }, [slot('a', []), slot('b', [])]),
    );
    const exported = launcherOptions(l).flatMap((a, i, all) => (all[i - 1] === '-x' ? [a] : []));
    expect(exported).toEqual(Object.keys(l.env).sort());
    expect(exported).toEqual([
      'FOO',
      'OMP_NUM_THREADS',
      'PF_PILOT_ID',
      'PF_RANKS',
      'PF_RANK_GPUS',
      'PF_SESSION_ID',
      'PF_TASK_ATTEMPT',
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
    expect(launcherOptions(l).slice(0, 2)).toEqual(['-np', '1']);
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
