import { describe, expect, it } from '@jest/globals';
import type { TaskRecord } from '../../../src/generated';
import {
  born,
  published,
  taskNotification,
  transition,
} from '../../../src/components/shared/transition';
import { StateTracker } from '../../../src/states/state-tracker';
import {
  handOffNamesPilot,
  isQuiet,
  QUIET_FUNCTION_STATES,
} from '../../../src/states/quiet-states';
import {
  COMPONENTS,
  FINAL_TASK_STATES,
  TASK_MODEL,
  TASK_RETRY_STATE,
  TASK_STATES,
  type TaskState,
} from '../../../src/states/task-model';
import type { Notification } from '../../../src/states/notification';

const record = (mode: 'function' | 'executable', state: TaskState): TaskRecord => ({
  uid: 't1',
  attempt: 1,
  state,
  session: 's',
  description: mode === 'function' ? { mode, function: { module: '/m.js' } } : { mode },
});

/** Walks a task of `mode` through the whole model, as its owners would. */
function life(mode: 'function' | 'executable'): Notification[] {
  const task = record(mode, 'NEW');
  const out = [taskNotification('t1', 1, 'NEW', 0, COMPONENTS.taskManager, undefined, mode)];
  born(task, out[0]!);
  for (const state of TASK_STATES.slice(1, TASK_STATES.indexOf('DONE') + 1)) {
    const owner = TASK_MODEL.transitions.find(
      (t) => t.from === task.state && t.to === state,
    )!.owner;
    const detail =
      state === 'TMGR_STAGING_INPUT_PENDING'
        ? { pilot: 'p1' }
        : state === 'AGENT_STAGING_INPUT_PENDING' && handOffNamesPilot(mode)
          ? { pilot: 'p1' }
          : state === 'AGENT_STAGING_OUTPUT_PENDING' || state === 'TMGR_STAGING_OUTPUT_PENDING'
            ? { exitCode: 0, signal: null }
            : undefined;
    out.push(transition(task, state, owner, out.length, detail)); // ts: the state's place
  }
  return out;
}

/** What the publishers send of `ns`. */
const publish = published;

describe('quiet states of function tasks', () => {
  it('are never final, and leave the hand-off, the start, the hand-back and the end published', () => {
    for (const s of FINAL_TASK_STATES) expect(QUIET_FUNCTION_STATES.has(s)).toBe(false);
    expect(publish(life('function')).map((n) => n.state)).toEqual([
      'AGENT_STAGING_INPUT_PENDING',
      'AGENT_EXECUTING',
      'TMGR_STAGING_OUTPUT_PENDING',
      'DONE',
    ]);
  });

  it("leave an executable's waits published: scheduling, the hand-off, cores, its run, the hand-back, the end", () => {
    const all = life('executable');
    expect(all).toHaveLength(TASK_STATES.indexOf('DONE') + 1);
    expect(publish(all).map((n) => n.state)).toEqual([
      'TMGR_SCHEDULING',
      'AGENT_STAGING_INPUT_PENDING',
      'AGENT_SCHEDULING',
      'AGENT_EXECUTING',
      'TMGR_STAGING_OUTPUT_PENDING',
      'DONE',
    ]);
    // each quiet state rides, with its time, on the next published notification
    const carried = publish(all).flatMap((n) => n.detail?.passed ?? []).length / 2;
    expect(carried + publish(all).length).toBe(all.length);
    expect(isQuiet(undefined, 'TMGR_SCHEDULING', undefined)).toBe(false);
    // a stager with directives to perform can take long: its states are published then
    expect(isQuiet('executable', 'AGENT_STAGING_INPUT', undefined, false)).toBe(true);
    expect(isQuiet('executable', 'AGENT_STAGING_INPUT', undefined, true)).toBe(false);
    for (const s of TASK_STATES) expect(isQuiet('service', s, undefined)).toBe(false);
  });

  it('publish a quiet state that carries a fact no later notification repeats', () => {
    expect(isQuiet('function', 'TMGR_SCHEDULING_PENDING', undefined)).toBe(true);
    expect(isQuiet('function', 'TMGR_SCHEDULING_PENDING', { retried: 1 })).toBe(false);
    // where its files are can wait for the next published notification, which carries it
    expect(isQuiet('function', 'AGENT_SCHEDULING_PENDING', { sandbox: '/s/t1' })).toBe(true);
    expect(isQuiet('executable', 'AGENT_SCHEDULING_PENDING', { output: 'stream' })).toBe(true);
    const files = { sandbox: '/s/t1', output: 'files' } as const;
    expect(isQuiet('executable', 'AGENT_SCHEDULING_PENDING', files)).toBe(true);
    expect(isQuiet('executable', 'AGENT_SCHEDULING_PENDING', { retried: 1 })).toBe(false);
    expect(isQuiet('function', 'TMGR_STAGING_INPUT_PENDING', { pilot: 'p1' })).toBe(true);
    expect(isQuiet('function', 'AGENT_STAGING_OUTPUT_PENDING', { exitCode: 1 })).toBe(true);
    for (const s of ['FAILED', 'CANCELED'] as const) {
      expect(
        isQuiet('function', s, { reason: { code: 'E_CANCELED', message: '', component: 'x' } }),
      ).toBe(false);
    }
    expect(handOffNamesPilot('function')).toBe(true);
    expect(handOffNamesPilot('executable')).toBe(true);
    expect(handOffNamesPilot('service')).toBe(false);
  });

  it('are delivered by the tracker in model order from what is published, in any order: with their real time when what carried it came in order, else inferred', () => {
    const pub = publish(life('function'));
    for (const order of [pub, [...pub].reverse(), [pub[2]!, pub[0]!, pub[3]!, pub[1]!]]) {
      const tracker = new StateTracker<TaskState>(TASK_MODEL, TASK_RETRY_STATE);
      const got = order.flatMap((n) => tracker.ingest(n));
      expect(got.map((e) => e.state)).toEqual(
        TASK_STATES.slice(0, TASK_STATES.indexOf('DONE') + 1),
      );
      for (const e of got) {
        if (!QUIET_FUNCTION_STATES.has(e.state)) continue;
        if (order === pub) expect(e.inferred).toBe(false);
        if (e.inferred) expect(e.ts).toBeUndefined();
        else expect(e.ts).toBe(TASK_STATES.indexOf(e.state));
      }
    }
  });
});
