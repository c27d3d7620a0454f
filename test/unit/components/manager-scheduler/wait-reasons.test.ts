import { describe, expect, it } from '@jest/globals';
import {
  ManagerSchedulerCore,
  type PilotCapacity,
} from '../../../../src/components/manager-scheduler/core';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import type { FinalTaskState } from '../../../../src/states/task-model';
import { CoreHarness, taskRecord } from '../../../support/core-harness';

const P1: PilotCapacity = { uid: 'p1', cores: 4, gpus: 0 };
const P2: PilotCapacity = { uid: 'p2', cores: 8, gpus: 0 };

function setup() {
  const h = new CoreHarness();
  const effects = h.effects({
    forward: (ts: TaskRecord[]) =>
      h.rec.record(`forward ${ts.map((t) => `${t.uid}->${t.pilot ?? '?'}`).join(', ')}`),
  });
  const finals = new Map<string, FinalTaskState>();
  const core = new ManagerSchedulerCore(effects, h.clock, (u) => finals.get(u));
  /** Takes tasks in and drops the lines that say so. */
  const submit = (...tasks: TaskRecord[]): void => {
    core.onTasks(tasks);
    h.rec.take();
  };
  return Object.assign(h, { core, finals, submit });
}

function pending(uid: string, description: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'TMGR_SCHEDULING_PENDING', { description });
}

describe('ManagerSchedulerCore: why a task waits (worked out when asked)', () => {
  it('pilot: none added yet', () => {
    const s = setup();
    const at = s.clock.now();
    s.submit(pending('t1'));
    s.clock.advance(1_000);
    expect(s.core.whyWaiting('t1')).toEqual({
      kind: 'pilot',
      message: 'waiting for a pilot: none is added to the session yet (tmgr.addPilots)',
      component: 'ManagerScheduler',
      ts: at,
      pilots: [],
    });
    s.expectNoMore(); // asking changes nothing
  });

  it('pilot: added but none active yet, naming them', () => {
    const s = setup();
    s.core.onPilotAdded(P1);
    s.core.onPilotAdded(P2);
    s.submit(pending('t1'));
    expect(s.core.whyWaiting('t1')).toMatchObject({
      kind: 'pilot',
      message: 'waiting for a pilot to become active: p1, p2 not active yet',
      pilots: ['p1', 'p2'],
    });
    s.core.onPilotActive(P2);
    expect(s.rec.take()).toEqual(['notify t1 TMGR_STAGING_INPUT_PENDING', 'forward t1->p2']);
    expect(s.core.whyWaiting('t1')).toBeUndefined(); // placed: no reason left behind
    s.expectNoMore();
  });

  it('pilot: pinned to a pilot that is not active yet, or not added', () => {
    const s = setup();
    s.core.onPilotAdded(P1);
    s.submit(pending('pinned', { pilot: 'p1' }));
    expect(s.core.whyWaiting('pinned')).toMatchObject({
      kind: 'pilot',
      message: 'waiting for a pilot to become active: p1 not active yet',
      pilots: ['p1'],
    });
    s.core.onCancel(['pinned']);
    expect(s.rec.take()).toEqual(['notify pinned CANCELED']);
    expect(s.core.whyWaiting('pinned')).toBeUndefined();
    s.expectNoMore();
  });

  it('pilot: every active pilot it may use is full (room and backlog)', () => {
    const s = setup();
    s.core.onPilotAdded({ ...P1, active: true });
    // 4 cores of room and 64 of backlog: 68 cores of tasks fill it
    s.submit(...Array.from({ length: 17 }, (_, i) => pending(`f${i}`, { coresPerRank: 4 })));
    s.submit(pending('next'));
    expect(s.core.whyWaiting('next')).toMatchObject({
      kind: 'pilot',
      pilots: ['p1'],
      message:
        'waiting for room on pilot(s) p1: each holds as many tasks as it can run and queue ' +
        'now (p1: 68 cores given of 4)',
    });
    s.expectNoMore();
  });

  it('dependencies: which ones, and whether each has to end or be ready', () => {
    const s = setup();
    s.core.onPilotAdded({ ...P1, active: true });
    s.submit(
      pending('t', { after: ['a', { task: 'svc', on: 'ready' }, { task: 'b', on: 'final' }] }),
    );
    expect(s.core.whyWaiting('t')).toEqual({
      kind: 'dependencies',
      message:
        'waiting for dependencies: a (not yet ended), svc (not yet ready), b (not yet ended)',
      component: 'ManagerScheduler',
      ts: s.clock.now(),
      dependencies: [
        { task: 'a', on: 'done', waitsFor: 'end' },
        { task: 'svc', on: 'ready', waitsFor: 'ready' },
        { task: 'b', on: 'final', waitsFor: 'end' },
      ],
    });
    s.finals.set('a', 'DONE');
    s.core.onTasksFinal([{ uid: 'a', attempt: 1, state: 'DONE' }]);
    s.core.onTasksReady([{ uid: 'svc', attempt: 1, name: 'svc', endpoint: 'h:1' }]);
    expect(s.core.whyWaiting('t')?.dependencies).toEqual([
      { task: 'b', on: 'final', waitsFor: 'end' },
    ]);
    s.finals.set('b', 'FAILED');
    s.core.onTasksFinal([{ uid: 'b', attempt: 1, state: 'FAILED' }]);
    expect(s.rec.take()).toEqual(['notify t TMGR_STAGING_INPUT_PENDING', 'forward t->p1']);
    expect(s.core.whyWaiting('t')).toBeUndefined();
    s.expectNoMore();
  });

  it('knows no reason for a task it does not hold', () => {
    const s = setup();
    expect(s.core.whyWaiting('nobody')).toBeUndefined();
    s.expectNoMore();
  });
});
