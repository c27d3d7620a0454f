import { describe, expect, it } from '@jest/globals';
import { processKind } from '../../../../../src/components/executor/kinds/process';
import { DEFAULT_PIDS, taskLimitsOf } from '../../../../../src/components/executor/kinds/limits';
import type { TaskRecord } from '../../../../../src/generated';

const MIB = 1024 * 1024;

function task(d: Partial<TaskRecord['description']> = {}): TaskRecord {
  return {
    uid: 't1',
    attempt: 1,
    state: 'AGENT_EXECUTING',
    session: 's',
    pilot: 'p',
    sandbox: '/sb',
    description: { executable: '/bin/true', ...d },
  };
}

describe('taskLimitsOf', () => {
  it('limits memory to memPerRankMb x ranks, and pids to the default', () => {
    expect(taskLimitsOf(task({ memPerRankMb: 100, ranks: 1 }), 'fork')).toEqual({
      memoryBytes: 100 * MIB,
      pids: DEFAULT_PIDS,
    });
  });

  it("takes the task's own limits over memPerRankMb and the pilot's defaults", () => {
    const t = task({ memPerRankMb: 100, limits: { memoryMb: 50, pids: 20, cpus: 0.5 } });
    expect(taskLimitsOf(t, 'fork', { memoryMb: 10, pids: 99, cpus: true })).toEqual({
      memoryBytes: 50 * MIB,
      pids: 20,
      cpus: 0.5,
    });
  });

  it("falls back to the pilot's memory, pids 0 means none, and cpus: true gives the task its cores", () => {
    const t = task({ coresPerRank: 3 });
    expect(taskLimitsOf(t, 'fork', { memoryMb: 10, pids: 0, cpus: true })).toEqual({
      memoryBytes: 10 * MIB,
      cpus: 3,
    });
    expect(taskLimitsOf(t, 'fork', { pids: 0 })).toBeUndefined();
  });

  it('limits nothing that mpirun or srun start (their ranks run under their launcher)', () => {
    expect(taskLimitsOf(task({ memPerRankMb: 100 }), 'mpirun')).toBeUndefined();
    expect(taskLimitsOf(task({ memPerRankMb: 100 }), 'srun')).toBeUndefined();
  });
});

describe('processKind.exitReason', () => {
  const exit = { uid: 't1', exitCode: 137, signal: null };

  it('an OOM kill is E_OUT_OF_MEMORY, with the limit', () => {
    const why = processKind.exitReason!(task(), {
      ...exit,
      oom: { kills: 1, limitBytes: 32 * MIB },
    });
    expect(why).toEqual({
      code: 'E_OUT_OF_MEMORY',
      message:
        'the task used more than its memory limit of 32 MiB: the kernel killed a process of it (raise memPerRankMb or limits.memoryMb)',
      component: 'Executor',
      detail: { limitMb: 32, oomKills: 1, exitCode: 137, signal: null },
    });
  });

  it('a task that lived through an OOM kill of a child and exited 0 is no failure', () => {
    expect(
      processKind.exitReason!(task(), { ...exit, exitCode: 0, oom: { kills: 1, limitBytes: MIB } }),
    ).toBeUndefined();
  });
});
