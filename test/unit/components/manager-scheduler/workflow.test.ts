import { describe, expect, it } from '@jest/globals';
import { ManagerSchedulerCore } from '../../../../src/components/manager-scheduler/core';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import type { FinalTaskState } from '../../../../src/states/task-model';
import { CoreHarness, taskRecord } from '../../../support/core-harness';

let seq = 0;
function setup() {
  const h = new CoreHarness();
  const effects = h.effects({
    forward: (ts: TaskRecord[]) => {
      h.forwarded.push(...ts);
      h.rec.record(`forward ${ts.map((t) => `${t.uid}->${t.pilot ?? '?'}`).join(', ')}`);
    },
  });
  const finals = new Map<string, FinalTaskState>();
  const core = new ManagerSchedulerCore(effects, h.clock, (u) => finals.get(u));
  seq = 0;
  return Object.assign(h, { core, finals });
}

function pending(uid: string, description: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'TMGR_SCHEDULING_PENDING', { description, seq: seq++ });
}

/** Only the forward lines (where tasks went), in order. */
function forwards(lines: string[]): string[] {
  return lines.filter((l) => l.startsWith('forward'));
}

function finalOf(uid: string, state: FinalTaskState) {
  return { uid, attempt: 1, state };
}

describe('ManagerSchedulerCore: late binding', () => {
  it('binds nothing to a pilot until it is active, then binds what waits to it', () => {
    const { rec, core } = setup();
    core.onPilotAdded({ uid: 'queued', cores: 4, gpus: 0 });
    core.onTasks([pending('a'), pending('b')]);
    expect(rec.take()).toEqual(['notify a TMGR_SCHEDULING, b TMGR_SCHEDULING']);
    core.onPilotActive({ uid: 'queued', cores: 4, gpus: 0 });
    expect(forwards(rec.take())).toEqual(['forward a->queued, b->queued']);
    rec.expectNoMore();
  });

  it('sends every task to the active pilot while another waits in the queue, and both once it is up', () => {
    const { rec, core } = setup();
    core.onPilotAdded({ uid: 'held', cores: 2, gpus: 0 });
    core.onPilotAdded({ uid: 'live', cores: 2, gpus: 0, active: true });
    core.onTasks(Array.from({ length: 70 }, (_, i) => pending(`t${i}`)));
    // room on `live`: its 2 cores plus a backlog of 64
    const first = forwards(rec.take());
    expect(first[0]!.split(', ')).toHaveLength(66);
    expect(first[0]).not.toContain('held');
    expect(core.queued).toBe(4);
    core.onPilotActive({ uid: 'held', cores: 2, gpus: 0 });
    expect(forwards(rec.take())).toEqual(['forward t66->held, t67->held, t68->held, t69->held']);
    rec.expectNoMore();
  });

  it('remembers a pilot whose agent came up before it was added', () => {
    const { rec, core } = setup();
    core.onPilotActive({ uid: 'p', cores: 8, gpus: 0 });
    core.onPilotAdded({ uid: 'p', cores: 1, gpus: 0 });
    core.onTasks([pending('wide', { coresPerRank: 6 })]);
    expect(forwards(rec.take())).toEqual(['forward wide->p']);
    rec.expectNoMore();
  });

  it('binds more once tasks come back or end, and keeps submission order', () => {
    const { rec, core } = setup();
    core.onPilotAdded({ uid: 'p', cores: 128, gpus: 0, active: true });
    core.onTasks([pending('big', { coresPerRank: 100 }), pending('big2', { coresPerRank: 100 })]);
    expect(forwards(rec.take())).toEqual(['forward big->p, big2->p']); // bound: 200 of 256
    core.onTasks([pending('x', { coresPerRank: 60 }), pending('y', { coresPerRank: 1 })]);
    // x has no room; y could, but x came first and could only go where y would
    expect(forwards(rec.take())).toEqual([]);
    core.onReturned([{ uid: 'big' }]);
    expect(forwards(rec.take())).toEqual(['forward x->p, y->p']);
    core.onTasks([pending('z', { coresPerRank: 100 })]);
    expect(forwards(rec.take())).toEqual([]);
    core.onTasksFinal([finalOf('x', 'DONE')]);
    expect(forwards(rec.take())).toEqual(['forward z->p']);
    rec.expectNoMore();
  });

  it('lets a later task take another pilot the earlier one cannot use', () => {
    const { rec, core } = setup();
    core.onPilotAdded({ uid: 'a', cores: 1, gpus: 0, active: true });
    core.onPilotAdded({ uid: 'b', cores: 1, gpus: 0, active: true });
    core.onTasks(Array.from({ length: 65 }, (_, i) => pending(`fill${i}`, { pilot: 'a' })));
    rec.take();
    core.onTasks([pending('onA', { pilot: 'a' }), pending('free')]);
    expect(forwards(rec.take())).toEqual(['forward free->b']);
    rec.expectNoMore();
  });

  it('orders by priority first, then by submission order across calls, a retry back in its place', () => {
    const { rec, core } = setup();
    core.onPilotAdded({ uid: 'p', cores: 1, gpus: 0 });
    core.onTasks([pending('a'), pending('b')]);
    core.onTasks([pending('c', { priority: 5 }), pending('d')]);
    const again = taskRecord('r', 'TMGR_SCHEDULING_PENDING', { seq: -1, attempt: 2 });
    core.onTasks([again]);
    rec.take();
    core.onPilotActive({ uid: 'p', cores: 1, gpus: 0 });
    expect(forwards(rec.take())).toEqual(['forward c->p, r->p, a->p, b->p, d->p']);
    rec.expectNoMore();
  });

  it.each([
    ['FAILED', 'FAILED', 'E_NO_SUCH_PILOT'],
    ['CANCELED', 'CANCELED', 'E_CANCELED'],
  ] as const)(
    'parks a task pinned to a pilot that is not up; that pilot ending %s first ends it %s',
    (pilotEnd, taskEnd, code) => {
      const { rec, notes, core } = setup();
      core.onPilotAdded({ uid: 'q', cores: 1, gpus: 0 });
      core.onPilotAdded({ uid: 'live', cores: 1, gpus: 0, active: true });
      core.onTasks([pending('pin', { pilot: 'q' }), pending('free')]);
      expect(forwards(rec.take())).toEqual(['forward free->live']);
      core.onPilotGone('q', pilotEnd);
      expect(rec.take()).toEqual([`notify pin ${taskEnd}`]);
      expect(notes.at(-1)?.detail?.reason?.code).toBe(code);
      expect(notes.at(-1)?.detail?.reason?.message).toContain("pinned pilot 'q'");
      rec.expectNoMore();
    },
  );
});

describe('ManagerSchedulerCore: dependencies', () => {
  function live() {
    const h = setup();
    h.core.onPilotAdded({ uid: 'p', cores: 1000, gpus: 0, active: true });
    return h;
  }

  it('holds a task until its dependency is DONE, across calls', () => {
    const { rec, core } = live();
    core.onTasks([pending('a')]);
    rec.take();
    core.onTasks([pending('b', { after: ['a'] })]);
    expect(rec.take()).toEqual(['notify b TMGR_SCHEDULING']);
    expect(core.queued).toBe(1);
    core.onTasksFinal([finalOf('a', 'DONE')]);
    expect(rec.take()).toEqual(['notify b TMGR_STAGING_INPUT_PENDING', 'forward b->p']);
    // told again (the store's copy after the output stager's): nothing more
    core.onTasksFinal([finalOf('a', 'DONE')]);
    rec.expectNoMore();
  });

  it('lets a task go at once when its dependency ended long before', () => {
    const { rec, core, finals } = live();
    finals.set('old', 'DONE');
    core.onTasks([pending('b', { after: [{ task: 'old', on: 'done' }] })]);
    expect(forwards(rec.take())).toEqual(['forward b->p']);
    rec.expectNoMore();
  });

  it('cancels a dependent whose dependency failed, naming it, and the dependents after it', () => {
    const { rec, notes, core } = live();
    core.onTasks([pending('a'), pending('b', { after: ['a'] }), pending('c', { after: ['b'] })]);
    core.onTasks([pending('cleanup', { after: [{ task: 'b', on: 'final' }] })]);
    rec.take();
    core.onTasksFinal([finalOf('a', 'FAILED')]);
    expect(rec.take()).toEqual([
      'notify b CANCELED, c CANCELED, cleanup TMGR_STAGING_INPUT_PENDING',
      'forward cleanup->p',
    ]);
    const b = notes.find((n) => n.uid === 'b' && n.state === 'CANCELED')!;
    expect(b.detail?.reason).toEqual({
      code: 'E_DEPENDENCY',
      message: "dependency a ended FAILED, so its condition 'done' can never hold",
      component: 'ManagerScheduler',
      detail: { dependency: 'a', on: 'done', ended: 'FAILED' },
    });
    const c = notes.find((n) => n.uid === 'c' && n.state === 'CANCELED')!;
    expect(c.detail?.reason?.message).toBe(
      "dependency b ended CANCELED, so its condition 'done' can never hold",
    );
    rec.expectNoMore();
  });

  it("runs an 'on: failed' task only when the dependency failed", () => {
    const { rec, core, finals } = live();
    finals.set('ok', 'DONE');
    core.onTasks([pending('x'), pending('onFail', { after: [{ task: 'x', on: 'failed' }] })]);
    core.onTasks([pending('never', { after: [{ task: 'ok', on: 'failed' }] })]);
    expect(rec.take().at(-1)).toBe('notify never TMGR_SCHEDULING, never CANCELED');
    core.onTasksFinal([finalOf('x', 'FAILED')]);
    expect(forwards(rec.take())).toEqual(['forward onFail->p']);
    rec.expectNoMore();
  });

  it('waits for every dependency, and a cancel of a waiting task reaches its dependents', () => {
    const { rec, core } = live();
    core.onTasks([pending('a'), pending('b')]);
    core.onTasks([pending('j', { after: ['a', 'b'] }), pending('k', { after: ['j'] })]);
    rec.take();
    core.onTasksFinal([finalOf('a', 'DONE')]);
    rec.expectNoMore();
    core.onCancel(['j']);
    expect(rec.take()).toEqual(['notify j CANCELED, k CANCELED']);
    core.onTasksFinal([finalOf('b', 'DONE')]);
    rec.expectNoMore();
    expect(core.queued).toBe(0);
  });

  it("lets dependents on 'ready' go when the service is ready, each with its endpoint by name; on 'done' waits for its end", () => {
    const { rec, core, forwarded } = live();
    const svc = { mode: 'service' as const, executable: 'srv' };
    core.onTasks([pending('db', svc), pending('web', svc)]);
    core.onTasks([
      pending('both', {
        after: [
          { task: 'db', on: 'ready' },
          { task: 'web', on: 'ready' },
        ],
      }),
      pending('report', { after: [{ task: 'db', on: 'ready' }, 'db'] }),
    ]);
    rec.take();
    core.onTasksReady([{ uid: 'db', attempt: 1, endpoint: 'n1:5432', name: 'DB' }]);
    rec.expectNoMore();
    core.onTasksReady([{ uid: 'web', attempt: 1, endpoint: 'n2:80', name: 'MY_WEB' }]);
    expect(forwards(rec.take())).toEqual(['forward both->p']);
    expect(forwarded.at(-1)!.services).toEqual({ DB: 'n1:5432', MY_WEB: 'n2:80' });
    // a dependent that comes once the service is ready goes at once
    core.onTasks([pending('late', { after: [{ task: 'web', on: 'ready' }] })]);
    expect(forwards(rec.take())).toEqual(['forward late->p']);
    expect(forwarded.at(-1)!.services).toEqual({ MY_WEB: 'n2:80' });
    core.onTasksFinal([finalOf('db', 'DONE')]);
    expect(forwards(rec.take())).toEqual(['forward report->p']);
    rec.expectNoMore();
  });

  it("cancels dependents on 'ready' of a service that ended before it was ready, or has ended", () => {
    const { rec, notes, core, finals } = live();
    core.onTasks([pending('s', { mode: 'service', executable: 'srv' })]);
    core.onTasks([pending('user', { after: [{ task: 's', on: 'ready' }] })]);
    rec.take();
    core.onTasksFinal([finalOf('s', 'FAILED')]);
    expect(rec.take()).toEqual(['notify user CANCELED']);
    expect(notes.at(-1)!.detail?.reason?.message).toBe(
      "dependency s ended FAILED, so its condition 'ready' can never hold",
    );
    finals.set('s', 'FAILED');
    core.onTasks([pending('later', { after: [{ task: 's', on: 'ready' }] })]);
    expect(rec.take()).toEqual(['notify later TMGR_SCHEDULING, later CANCELED']);
  });

  it("holds dependents on 'ready' of a service back for a retry until its new attempt is ready", () => {
    const { rec, core, forwarded } = live();
    core.onTasks([pending('s', { mode: 'service', executable: 'srv', retries: 1 })]);
    core.onTasksReady([{ uid: 's', attempt: 1, endpoint: 'old:1', name: 'S' }]);
    const retry = taskRecord('s', 'TMGR_SCHEDULING_PENDING', {
      attempt: 2,
      description: { mode: 'service', executable: 'srv', retries: 1 },
    });
    core.onTasks([retry]);
    rec.take();
    core.onTasks([pending('user', { after: [{ task: 's', on: 'ready' }] })]);
    expect(rec.take()).toEqual(['notify user TMGR_SCHEDULING']);
    core.onTasksReady([{ uid: 's', attempt: 2, endpoint: 'new:2', name: 'S' }]);
    expect(forwards(rec.take())).toEqual(['forward user->p']);
    expect(forwarded.at(-1)!.services).toEqual({ S: 'new:2' });
  });

  it('ends waiting tasks on shutdown', () => {
    const { rec, core } = live();
    core.onTasks([pending('a'), pending('b', { after: ['a'] })]);
    rec.take();
    core.onShutdown('CANCELED', { code: 'E_CANCELED', message: 'closed', component: 'x' });
    expect(rec.take()).toEqual(['notify b CANCELED']);
    rec.expectNoMore();
  });
});

describe('ManagerSchedulerCore: tasks a service let go that it still queues when the service stops serving', () => {
  /**
   * A service `s` on pilot q, ready at old:1, and two dependents let go that wait for their
   * pilot p to be up (parked here).
   */
  function queuedBehindService(retries = 0) {
    const h = setup();
    h.core.onPilotAdded({ uid: 'q', cores: 4, gpus: 0, active: true });
    h.core.onPilotAdded({ uid: 'p', cores: 4, gpus: 0 });
    const svc = { mode: 'service' as const, executable: 'srv', retries, pilot: 'q' };
    h.core.onTasks([pending('s', svc)]);
    h.core.onTasksReady([{ uid: 's', attempt: 1, endpoint: 'old:1', name: 'S' }]);
    const after = [{ task: 's', on: 'ready' as const }];
    h.core.onTasks([pending('u1', { after, pilot: 'p' }), pending('u2', { after, pilot: 'p' })]);
    h.rec.take();
    return Object.assign(h, { svc });
  }

  it('ends them CANCELED E_DEPENDENCY when the service ends', () => {
    const { rec, core, notes } = queuedBehindService();
    core.onTasksFinal([finalOf('s', 'FAILED')]);
    expect(rec.take()).toEqual(['notify u1 CANCELED, u2 CANCELED']);
    expect(notes.at(-1)!.detail?.reason).toMatchObject({
      code: 'E_DEPENDENCY',
      message: "dependency s ended FAILED, so its condition 'ready' can never hold",
    });
    core.onPilotActive({ uid: 'p', cores: 4, gpus: 0 });
    rec.expectNoMore();
  });

  it('holds them for the next attempt of a service back for a retry, which gives them its endpoint', () => {
    const { rec, core, forwarded, svc } = queuedBehindService(1);
    // the ended attempt comes back from its pilot (its room is free) before its retry arrives
    core.onReturned([taskRecord('s', 'TMGR_STAGING_OUTPUT_PENDING', { endpoint: 'old:1' })]);
    core.onPilotActive({ uid: 'p', cores: 4, gpus: 0 });
    rec.expectNoMore();
    core.onTasks([taskRecord('s', 'TMGR_SCHEDULING_PENDING', { attempt: 2, description: svc })]);
    rec.take();
    core.onTasksReady([{ uid: 's', attempt: 2, endpoint: 'new:2', name: 'S' }]);
    expect(forwards(rec.take())).toEqual(['forward u1->p, u2->p']);
    expect(forwarded.slice(-2).map((t) => [t.services, t.readyOf])).toEqual([
      [{ S: 'new:2' }, { s: 2 }],
      [{ S: 'new:2' }, { s: 2 }],
    ]);
  });

  it('does not let go with the dead endpoint the tasks a pilot gave back for it (onServiceGone)', () => {
    const { rec, core } = queuedBehindService(1);
    core.onServiceGone('s', 1);
    core.onTasks([pending('back', { after: [{ task: 's', on: 'ready' }], pilot: 'p' })]);
    core.onPilotActive({ uid: 'p', cores: 4, gpus: 0 });
    expect(forwards(rec.take())).toEqual([]);
    core.onTasksReady([{ uid: 's', attempt: 2, endpoint: 'new:2', name: 'S' }]);
    expect(forwards(rec.take())).toEqual(['forward u1->p, u2->p, back->p']);
  });
});
