import { describe, expect, it } from '@jest/globals';
import { Task } from '../../../src/client/task';
import { formatRate, formatSummary, summarize, taskRate } from '../../../src/cli/summary';
import type { Reason } from '../../../src/generated';
import type { TaskState } from '../../../src/states/task-model';

/** A task whose last state, `state`, came at `ts` (epoch ms). */
function task(uid: string, state: TaskState, ts: number, more: Partial<Task> = {}): Task {
  const t = new Task(uid, { executable: '/bin/true' });
  t.record(state, 1, false, ts);
  t.state = state;
  Object.assign(t, more);
  return t;
}

describe('the rate of a run', () => {
  it('counts what the run did, over its own time, and says 0.32 rather than 0', () => {
    expect(taskRate(10, 31)).toBeCloseTo(0.3226, 3);
    expect(taskRate(5, 0)).toBe(0);
    expect([0.3226, 3.49, 47.2, 1234.5, 0].map(formatRate)).toEqual([
      '0.32',
      '3.5',
      '47',
      '1235',
      '0',
    ]);
  });

  it('divides by a resumed run the tasks that ended since it began, not those before', () => {
    const before = Array.from({ length: 90 }, (_, i) => task(`old.${i}`, 'DONE', 1_000));
    const since = Array.from({ length: 10 }, (_, i) => task(`new.${i}`, 'DONE', 60_000 + i));
    const s = summarize('pf.x', [...before, ...since], 20, {}, 50_000);
    expect([s.tasks, s.endedInRun, s.tasksPerS]).toEqual([100, 10, 0.5]);
    expect(formatSummary(s).split('\n')[0]).toBe(
      'session pf.x: 100 tasks, 10 ended in 20.00 s (0.5 tasks/s)',
    );
    const fresh = summarize('pf.y', since.slice(0, 10), 31, {}, 50_000);
    expect(formatSummary(fresh).split('\n')[0]).toBe(
      'session pf.y: 10 tasks in 31.00 s (0.32 tasks/s)',
    );
  });

  it('lists every task with its state, reason, exit code and result', () => {
    const reason: Reason = {
      code: 'E_EXIT_CODE',
      message: 'task exited with code 1',
      component: 'Executor',
    };
    const tasks = [
      task('a', 'DONE', 5, { exitCode: 0 }),
      task('b', 'FAILED', 5, { exitCode: 1, signal: null, reason }),
      task('c', 'DONE', 5, { result: { sum: 3 } }),
      task('d', 'AGENT_EXECUTING', 5),
    ];
    expect(summarize('pf.z', tasks, 1, {}, 0).taskList).toEqual([
      { uid: 'a', state: 'DONE', exitCode: 0 },
      { uid: 'b', state: 'FAILED', exitCode: 1, signal: null, reason },
      { uid: 'c', state: 'DONE', result: { sum: 3 } },
      { uid: 'd', state: 'AGENT_EXECUTING' },
    ]);
  });
});
