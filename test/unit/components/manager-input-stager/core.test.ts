import { describe, expect, it } from '@jest/globals';
import { ManagerInputStagerCore } from '../../../../src/components/manager-input-stager/core';
import type { ManagerInputStagerEffects } from '../../../../src/components/manager-input-stager/effects';
import { IllegalTransitionError } from '../../../../src/errors';
import type { Notification, TaskRecord } from '../../../../src/generated';
import { TASK_STATES } from '../../../../src/states/task-model';
import { FakeClock } from '../../../support/fake-clock';
import { notifyLine, taskIn, uidsLine } from '../../../support/fixtures';
import { EffectRecorder } from '../../../support/recorder';

const CLOSED = {
  code: 'E_CANCELED' as const,
  message: 'the session was closed',
  component: 'Session',
};

function setup() {
  const rec = new EffectRecorder();
  const clock = new FakeClock();
  const notes: Notification[] = [];
  const effects: ManagerInputStagerEffects = {
    notify: (ns) => {
      notes.push(...ns);
      rec.record(notifyLine(ns));
    },
    forwardToPilot: (pilot, ts) => rec.record(uidsLine(`forwardToPilot ${pilot}:`, ts)),
  };
  const core = new ManagerInputStagerCore(effects, clock);
  return { rec, clock, notes, core };
}

function pending(uid: string, pilot = 'p1'): TaskRecord {
  return taskIn('TMGR_STAGING_INPUT_PENDING', { uid, pilot });
}

/** The notify line for tasks that pass straight through to their pilot. */
function through(uids: string[]): string {
  return `notify ${uids.map((u) => `${u} TMGR_STAGING_INPUT, ${u} AGENT_STAGING_INPUT_PENDING`).join(', ')}`;
}

describe('ManagerInputStagerCore', () => {
  it('takes a task through TMGR_STAGING_INPUT and hands it to its pilot as AGENT_STAGING_INPUT_PENDING', () => {
    const { rec, clock, notes, core } = setup();
    const t = pending('t1');
    core.onTasks([t]);
    expect(rec.take()).toEqual([through(['t1']), 'forwardToPilot p1: t1']);
    expect(t.state).toBe('AGENT_STAGING_INPUT_PENDING');
    const base = {
      kind: 'task',
      uid: 't1',
      attempt: 1,
      ts: clock.now(),
      component: 'ManagerInputStager',
    };
    expect(notes).toEqual([
      { ...base, state: 'TMGR_STAGING_INPUT' },
      { ...base, state: 'AGENT_STAGING_INPUT_PENDING' },
    ]);
    rec.expectNoMore();
  });

  it('groups a bulk per pilot: one notify, then one forwardToPilot call per pilot', () => {
    const { rec, core } = setup();
    core.onTasks([
      pending('a', 'p1'),
      pending('b', 'p2'),
      pending('c', 'p1'),
      pending('d', 'p3'),
      pending('e', 'p2'),
    ]);
    expect(rec.take()).toEqual([
      through(['a', 'b', 'c', 'd', 'e']),
      'forwardToPilot p1: a, c',
      'forwardToPilot p2: b, e',
      'forwardToPilot p3: d',
    ]);
    rec.expectNoMore();
  });

  it('fails a task whose pilot has ended with E_PILOT_ENDED naming the pilot and its state', () => {
    const { rec, notes, core } = setup();
    core.onPilotGone('p1', 'FAILED');
    rec.expectNoMore();
    const t = pending('t1', 'p1');
    core.onTasks([t, pending('t2', 'p2')]);
    expect(rec.take()).toEqual([
      'notify t1 TMGR_STAGING_INPUT, t1 FAILED, t2 TMGR_STAGING_INPUT, t2 AGENT_STAGING_INPUT_PENDING',
      'forwardToPilot p2: t2',
    ]);
    const why = {
      code: 'E_PILOT_ENDED',
      message: 'pilot p1 ended (FAILED) before the task reached it',
      component: 'ManagerInputStager',
    };
    expect(t.state).toBe('FAILED');
    expect(t.reason).toEqual(why);
    expect(notes[1]?.detail).toEqual({ reason: why });
    rec.expectNoMore();
  });

  it('fails a task that arrives without a pilot', () => {
    const { rec, core } = setup();
    const t = taskIn('TMGR_STAGING_INPUT_PENDING');
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_INPUT, t1 FAILED']);
    expect(t.reason).toEqual({
      code: 'E_PILOT_ENDED',
      message: 'task reached input staging without a pilot',
      component: 'ManagerInputStager',
    });
    rec.expectNoMore();
  });

  it('cancels a task on receipt when its cancel came first, and does not send it', () => {
    const { rec, notes, core } = setup();
    core.onCancel(['t1']);
    rec.expectNoMore();
    const t = pending('t1');
    core.onTasks([t, pending('t2')]);
    expect(rec.take()).toEqual([
      'notify t1 CANCELED, t2 TMGR_STAGING_INPUT, t2 AGENT_STAGING_INPUT_PENDING',
      'forwardToPilot p1: t2',
    ]);
    expect(t.state).toBe('CANCELED');
    expect(notes[0]?.detail).toEqual({
      reason: {
        code: 'E_CANCELED',
        message: 'task canceled by the user',
        component: 'ManagerInputStager',
      },
    });
    rec.expectNoMore();
  });

  it('cancels rather than fails a canceled task whose pilot has ended', () => {
    const { rec, core } = setup();
    core.onPilotGone('p1', 'DONE');
    core.onCancel(['t1']);
    core.onTasks([pending('t1')]);
    expect(rec.take()).toEqual(['notify t1 CANCELED']);
    rec.expectNoMore();
  });

  it('does nothing on a cancel for a task it has already handed on, nor on shutdown', () => {
    const { rec, core } = setup();
    const t = pending('t1');
    core.onTasks([t]);
    rec.take();
    core.onCancel(['t1']);
    core.onShutdown('CANCELED', CLOSED);
    expect(t.state).toBe('AGENT_STAGING_INPUT_PENDING');
    rec.expectNoMore();
  });

  describe('hand-over', () => {
    const others = TASK_STATES.filter((st) => st !== 'TMGR_STAGING_INPUT_PENDING');

    it('receives a task in TMGR_STAGING_INPUT_PENDING and walks it through every state it owns', () => {
      const { rec, notes, core } = setup();
      core.onTasks([pending('t1')]);
      expect(['TMGR_STAGING_INPUT_PENDING', ...notes.map((n) => n.state)]).toEqual([
        'TMGR_STAGING_INPUT_PENDING',
        'TMGR_STAGING_INPUT',
        'AGENT_STAGING_INPUT_PENDING',
      ]);
      rec.take();
      rec.expectNoMore();
    });

    it.each(others)('throws IllegalTransitionError for a task handed over in %s', (state) => {
      const { rec, core } = setup();
      const t = taskIn(state, { pilot: 'p1' });
      expect(() => core.onTasks([t])).toThrow(IllegalTransitionError);
      expect(t.state).toBe(state);
      rec.expectNoMore();
    });

    it.each(others)(
      'throws for a task handed over in %s even when its cancel came first',
      (state) => {
        const { rec, core } = setup();
        core.onCancel(['t1']);
        const t = taskIn(state, { pilot: 'p1' });
        expect(() => core.onTasks([t])).toThrow(IllegalTransitionError);
        expect(t.state).toBe(state);
        rec.expectNoMore();
      },
    );

    it('rejects a bulk holding a task in another state without touching any of it', () => {
      const { rec, core } = setup();
      const ok = pending('ok');
      const wrong = taskIn('TMGR_SCHEDULING', { uid: 'wrong', pilot: 'p1' });
      expect(() => core.onTasks([ok, wrong])).toThrow(IllegalTransitionError);
      expect(ok.state).toBe('TMGR_STAGING_INPUT_PENDING');
      rec.expectNoMore();
    });
  });
});
