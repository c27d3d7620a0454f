import { describe, expect, it } from '@jest/globals';
import { returnPlan } from '../../../../src/client/pipeline/pilot-recovery';
import { Task } from '../../../../src/client/task';
import type { Reason } from '../../../../src/generated';
import type { TaskState } from '../../../../src/states/task-model';

const why: Reason = { code: 'E_PILOT_DRAINS', message: 'drains', component: 'AgentScheduler' };

function task(uid: string, state: TaskState, attempt = 1, retries = 0): Task {
  const t = new Task(uid, { executable: '/bin/true', retries });
  t.record(state, attempt, false, 1_000);
  t.state = state;
  t.attempt = attempt;
  return t;
}

describe('returnPlan: tasks a draining pilot gives back', () => {
  const tasks = new Map([
    ['waiting', task('waiting', 'AGENT_SCHEDULING', 1, 2)],
    ['lagging', task('lagging', 'TMGR_STAGING_INPUT')], // the client has not heard more yet
    ['running', task('running', 'AGENT_EXECUTING')],
    ['ended', task('ended', 'DONE')],
    ['newer', task('newer', 'AGENT_SCHEDULING', 2)],
    ['foreign', task('foreign', 'AGENT_SCHEDULING')],
  ]);
  const owns = (_: string, uid: string): boolean => uid !== 'foreign';
  const given = [...tasks.keys(), 'unknown'].map((uid) => ({ uid, attempt: 1 }));
  const plan = returnPlan('pilot.0000', given, why, (u) => tasks.get(u), owns, 's', 5_000);

  it('starts each unstarted, current, owned task again as a new attempt that uses no retry', () => {
    expect(plan.retry.map((r) => [r.uid, r.attempt, r.state, r.retried])).toEqual([
      ['waiting', 2, 'TMGR_SCHEDULING_PENDING', 0],
      ['lagging', 2, 'TMGR_SCHEDULING_PENDING', 0],
    ]);
    expect(plan.notes[0]).toMatchObject({
      uid: 'waiting',
      attempt: 2,
      state: 'TMGR_SCHEDULING_PENDING',
      ts: 5_000,
      detail: { reason: why, retried: 0, pilot: 'pilot.0000' },
    });
  });

  it('refuses a started, ended, newer, foreign or unknown task', () => {
    expect(plan.refused).toBe(5);
  });
});
