import { describe, expect, it } from '@jest/globals';
import type { TaskRecord } from '../../../../src/generated';
import {
  born,
  published,
  shift,
  taskNotification,
  transition,
} from '../../../../src/components/shared/transition';
import { IllegalTransitionError } from '../../../../src/errors';
import type { Notification, NotificationDetail } from '../../../../src/states/notification';
import { passedStates } from '../../../../src/states/passed';
import { COMPONENTS as C, type TaskState } from '../../../../src/states/task-model';

const fnRecord = (uid: string, state: TaskState, attempt = 1): TaskRecord => ({
  uid,
  attempt,
  state,
  session: 's',
  description: { mode: 'function', function: { module: '/m.js' } },
});

const move = (
  t: TaskRecord,
  to: TaskState,
  owner: string,
  ts: number,
  detail?: NotificationDetail,
) => transition(t, to, owner, ts, detail);

describe('quiet states carried on the record to the next published notification', () => {
  it("gives the published one the quiet ones' states and times, and their detail under its own", () => {
    const t = fnRecord('a', 'AGENT_STAGING_INPUT_PENDING');
    const ns: Notification[] = [
      move(t, 'AGENT_STAGING_INPUT', C.agentInputStager, 1),
      move(t, 'AGENT_SCHEDULING_PENDING', C.agentInputStager, 2),
      move(t, 'AGENT_SCHEDULING', C.agentScheduler, 3),
      move(t, 'AGENT_EXECUTING_PENDING', C.agentScheduler, 3),
    ];
    expect(published(ns)).toEqual([]);
    const start = move(t, 'AGENT_EXECUTING', C.executor, 4);
    expect(passedStates(start)).toEqual([
      ['AGENT_STAGING_INPUT', 1],
      ['AGENT_SCHEDULING_PENDING', 2],
      ['AGENT_SCHEDULING', 3],
      ['AGENT_EXECUTING_PENDING', 3],
    ]);
    const exit = move(t, 'AGENT_STAGING_OUTPUT_PENDING', C.executor, 6, {
      exitCode: 0,
      signal: null,
      slots: [{ node: 'n', cores: [1], gpus: [] }],
    });
    move(t, 'AGENT_STAGING_OUTPUT', C.agentOutputStager, 7);
    const back = move(t, 'TMGR_STAGING_OUTPUT_PENDING', C.agentOutputStager, 8, {
      exitCode: 0,
      signal: null,
      stdout: 'x',
    });
    expect(published([exit, back])).toEqual([back]);
    expect(back.detail).toEqual({
      exitCode: 0,
      signal: null,
      stdout: 'x',
      slots: [{ node: 'n', cores: [1], gpus: [] }],
      passed: [11, 2, 12, 1], // [state code, ms before 8]
    });
  });

  it('carries the first state made without a transition (NEW) too', () => {
    const t = fnRecord('b', 'NEW');
    const birth = taskNotification('b', 1, 'NEW', 10, C.taskManager, undefined, 'function');
    born(t, birth);
    move(t, 'TMGR_SCHEDULING_PENDING', C.taskManager, 10);
    move(t, 'TMGR_SCHEDULING', C.managerScheduler, 11);
    move(t, 'TMGR_STAGING_INPUT_PENDING', C.managerScheduler, 12, { pilot: 'p' });
    move(t, 'TMGR_STAGING_INPUT', C.managerInputStager, 13);
    const handOff = move(t, 'AGENT_STAGING_INPUT_PENDING', C.managerInputStager, 13, {
      pilot: 'p',
    });
    expect(passedStates(handOff).map(([s]) => s)).toEqual([
      'NEW',
      'TMGR_SCHEDULING_PENDING',
      'TMGR_SCHEDULING',
      'TMGR_STAGING_INPUT_PENDING',
      'TMGR_STAGING_INPUT',
    ]);
    expect(handOff.detail!.pilot).toBe('p');
  });

  it('gives a failure what was carried, and never leaves it on the record for the wire', () => {
    const t = fnRecord('c', 'AGENT_STAGING_INPUT_PENDING');
    move(t, 'AGENT_STAGING_INPUT', C.agentInputStager, 1);
    const failed = move(t, 'FAILED', C.agentInputStager, 2, {
      reason: { code: 'E_STAGING', message: 'm', component: 'AgentInputStager' },
    });
    expect(passedStates(failed)).toEqual([['AGENT_STAGING_INPUT', 1]]);
    expect(JSON.parse(JSON.stringify(t))).toEqual({ ...t }); // nothing but string keys
    expect(Object.getOwnPropertySymbols(t).map((s) => (t as never)[s])).toEqual([undefined]);
  });

  it('leaves an executable task, which has no quiet states, alone', () => {
    const t: TaskRecord = {
      ...fnRecord('e', 'AGENT_SCHEDULING_PENDING'),
      description: { executable: '/bin/true' },
    };
    const n = move(t, 'AGENT_SCHEDULING', C.agentScheduler, 1);
    expect(published([n])).toEqual([n]);
    expect(n.detail).toBeUndefined();
    expect(Object.getOwnPropertySymbols(t)).toEqual([]);
  });

  it('shift moves a task as its owner without a notification, and drops what was carried', () => {
    const t = fnRecord('s', 'AGENT_STAGING_INPUT_PENDING');
    move(t, 'AGENT_STAGING_INPUT', C.agentInputStager, 1); // quiet: carried on the record
    shift(t, 'AGENT_SCHEDULING_PENDING', C.agentInputStager);
    expect(t.state).toBe('AGENT_SCHEDULING_PENDING');
    expect(() => shift(t, 'AGENT_SCHEDULING', C.executor)).toThrow(IllegalTransitionError);
    move(t, 'AGENT_SCHEDULING', C.agentScheduler, 3);
    move(t, 'AGENT_EXECUTING_PENDING', C.agentScheduler, 3);
    // only what came after the shift reaches the next published notification
    const start = move(t, 'AGENT_EXECUTING', C.executor, 4);
    expect(passedStates(start)).toEqual([
      ['AGENT_SCHEDULING', 3],
      ['AGENT_EXECUTING_PENDING', 3],
    ]);
  });
});
