import { describe, expect, it } from '@jest/globals';
import { STATE_CODES } from '../../../../src/states/state-codes';
import { facts } from '../../../support/facts';
import { ManagerInputStagerCore } from '../../../../src/components/manager-input-stager/core';
import type { TaskRecord } from '../../../../src/generated';
import {
  CoreHarness,
  handOverTests,
  SESSION_CLOSED,
  taskIn,
  taskRecord,
} from '../../../support/core-harness';

function setup() {
  const h = new CoreHarness();
  const effects = {
    notify: h.notify,
    forwardToPilot: (pilot: string, ts: TaskRecord[]) => h.uids(`forwardToPilot ${pilot}:`)(ts),
    retry: (ts: TaskRecord[]) =>
      h.rec.record(`retry ${ts.map((t) => `${t.uid}#${t.attempt} ${t.state}`).join(', ')}`),
  };
  return Object.assign(h, { core: new ManagerInputStagerCore(effects, h.clock) });
}

function pending(uid: string, pilot = 'p1'): TaskRecord {
  return taskRecord(uid, 'TMGR_STAGING_INPUT_PENDING', { pilot });
}

/** The notify line for tasks that pass straight through to their pilot. */
function through(uids: string[]): string {
  return `notify ${uids.map((u) => `${u} TMGR_STAGING_INPUT, ${u} AGENT_STAGING_INPUT_PENDING`).join(', ')}`;
}

describe('ManagerInputStagerCore', () => {
  it('takes a task through TMGR_STAGING_INPUT and hands it to its pilot as AGENT_STAGING_INPUT_PENDING', () => {
    const { rec, noteBase, notes, core } = setup();
    const t = pending('t1');
    core.onTasks([t]);
    expect(rec.take()).toEqual([through(['t1']), 'forwardToPilot p1: t1']);
    expect(t.state).toBe('AGENT_STAGING_INPUT_PENDING');
    const base = noteBase('ManagerInputStager');
    expect(notes).toEqual([
      { ...base, state: 'TMGR_STAGING_INPUT' },
      {
        ...base,
        state: 'AGENT_STAGING_INPUT_PENDING',
        // the hand-off names the pilot, and carries the quiet TMGR_STAGING_INPUT's time
        detail: { pilot: 'p1', passed: [STATE_CODES.indexOf('TMGR_STAGING_INPUT'), 0] },
      },
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

  it('sends a task whose pilot has ended back to scheduling as its next attempt, not charged', () => {
    const { rec, notes, core } = setup();
    core.onPilotGone('p1', 'FAILED');
    rec.expectNoMore();
    const t = taskRecord('t1', 'TMGR_STAGING_INPUT_PENDING', {
      pilot: 'p1',
      seq: 7,
      description: { executable: '/bin/true', retries: 1 },
    });
    core.onTasks([t, pending('t2', 'p2')]);
    expect(rec.take()).toEqual([
      'notify t1 TMGR_STAGING_INPUT, t1 TMGR_SCHEDULING_PENDING, t2 TMGR_STAGING_INPUT, t2 AGENT_STAGING_INPUT_PENDING',
      'forwardToPilot p2: t2',
      'retry t1#2 TMGR_SCHEDULING_PENDING',
    ]);
    const why = {
      code: 'E_PILOT_ENDED',
      message: 'pilot p1 ended (FAILED) before the task reached it',
      component: 'ManagerInputStager',
    };
    expect(notes[1]).toMatchObject({ attempt: 2, detail: { reason: why, retried: 0 } });
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
    expect(facts(notes[0])).toEqual({
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
    core.onShutdown('CANCELED', SESSION_CLOSED);
    expect(t.state).toBe('AGENT_STAGING_INPUT_PENDING');
    rec.expectNoMore();
  });

  describe('staging directives', () => {
    const taskOf = (uid: string) =>
      uid === 'ran'
        ? { sandbox: '/sess/p1/ran' }
        : uid === 'waits'
          ? { sandbox: undefined }
          : undefined;
    function setupWithTasks() {
      const h = new CoreHarness();
      const effects = {
        notify: h.notify,
        forwardToPilot: (pilot: string, ts: TaskRecord[]) => h.uids(`forwardToPilot ${pilot}:`)(ts),
        retry: h.uids('retry'),
      };
      const core = new ManagerInputStagerCore(effects, h.clock, {
        clientCwd: '/home/u',
        taskOf,
        ranIn: () => undefined,
      });
      return Object.assign(h, { core });
    }

    it('resolves them into the record for the agent, leaving the description as written', () => {
      const { rec, core } = setupWithTasks();
      const inputStaging = [
        { source: 'client://in.txt', target: 'task://' },
        { source: 'task://ran/out.txt', target: 'task://prev.txt', action: 'link' as const },
      ];
      const outputStaging = [{ source: 'task://r', target: 'client://res/' }];
      const t = taskRecord('t1', 'TMGR_STAGING_INPUT_PENDING', {
        pilot: 'p1',
        description: { inputStaging, outputStaging },
      });
      const before = structuredClone(t.description);
      core.onTasks([t]);
      expect(rec.take()).toEqual([through(['t1']), 'forwardToPilot p1: t1']);
      expect(t.staging).toEqual({
        input: [
          { source: '/home/u/in.txt', target: 'task://', action: 'copy', optional: false },
          {
            source: '/sess/p1/ran/out.txt',
            target: 'task://prev.txt',
            action: 'link',
            optional: false,
          },
        ],
        output: [{ source: 'task://r', target: '/home/u/res/', action: 'copy', optional: false }],
      });
      expect(t.description).toEqual(before);
      rec.expectNoMore();
    });

    it('fails a task naming another task that has no sandbox yet, in TMGR_STAGING_INPUT', () => {
      const { rec, notes, core } = setupWithTasks();
      const t = taskRecord('t1', 'TMGR_STAGING_INPUT_PENDING', {
        pilot: 'p1',
        description: { inputStaging: [{ source: 'task://waits/x', target: 'task://' }] },
      });
      core.onTasks([t, pending('t2')]);
      expect(rec.take()).toEqual([
        'notify t1 TMGR_STAGING_INPUT, t1 FAILED, t2 TMGR_STAGING_INPUT, t2 AGENT_STAGING_INPUT_PENDING',
        'forwardToPilot p1: t2',
      ]);
      const why = {
        code: 'E_STAGING',
        message:
          "inputStaging[0]: 'task://waits/x': task waits has no sandbox yet (it has not run)",
        component: 'ManagerInputStager',
      };
      expect(t.reason).toEqual(why);
      expect(facts(notes[1])).toEqual({ reason: why });
      rec.expectNoMore();
    });
  });

  describe('hand-over', () => {
    handOverTests({
      from: 'TMGR_STAGING_INPUT_PENDING',
      setup,
      pending,
      walk: ['TMGR_STAGING_INPUT', 'AGENT_STAGING_INPUT_PENDING'],
      others: { pilot: 'p1' },
      bulk: { wrong: 'TMGR_SCHEDULING' },
    });
  });
});
