import { describe, expect, it } from '@jest/globals';
import {
  ManagerSchedulerCore,
  type PilotCapacity,
} from '../../../../src/components/manager-scheduler/core';
import { LANE_DEPTH } from '../../../../src/components/shared/lane-calls';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import type { FinalTaskState } from '../../../../src/states/task-model';
import {
  canceledByUser,
  CoreHarness,
  handOverTests,
  SESSION_CLOSED,
  taskRecord,
} from '../../../support/core-harness';

const SMALL: PilotCapacity = { uid: 'p1', cores: 4, gpus: 0 };
const BIG: PilotCapacity = { uid: 'p2', cores: 16, gpus: 2 };
const SMALL2: PilotCapacity = { uid: 'p3', cores: 4, gpus: 0 };
function setup(...pilots: PilotCapacity[]) {
  const h = new CoreHarness();
  const effects = h.effects({
    // where each task goes is what this component decides, so record it
    forward: (ts: TaskRecord[]) =>
      h.rec.record(`forward ${ts.map((t) => `${t.uid}->${t.pilot ?? '?'}`).join(', ')}`),
  });
  const finals = new Map<string, FinalTaskState>();
  const core = new ManagerSchedulerCore(effects, h.clock, (u) => finals.get(u));
  for (const p of pilots) core.onPilotAdded({ ...p, active: true });
  return Object.assign(h, { core, finals });
}

function pending(uid: string, description: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'TMGR_SCHEDULING_PENDING', { description });
}

/** Notify line of tasks taken on, then placed in order, in a single onTasks call. */
function placedLine(uids: string[]): string {
  return `notify ${[...uids.map((u) => `${u} TMGR_SCHEDULING`), ...uids.map((u) => `${u} TMGR_STAGING_INPUT_PENDING`)].join(', ')}`;
}

describe('ManagerSchedulerCore', () => {
  it('assigns a task to a pilot and hands it on as TMGR_STAGING_INPUT_PENDING', () => {
    const { rec, noteBase, notes, core } = setup(SMALL);
    const t = pending('t1');
    core.onTasks([t]);
    expect(rec.take()).toEqual([placedLine(['t1']), 'forward t1->p1']);
    expect(t.state).toBe('TMGR_STAGING_INPUT_PENDING');
    expect(t.pilot).toBe('p1');
    const base = noteBase('ManagerScheduler');
    expect(notes).toEqual([
      { ...base, state: 'TMGR_SCHEDULING' },
      { ...base, state: 'TMGR_STAGING_INPUT_PENDING', detail: { pilot: 'p1' } },
    ]);
    rec.expectNoMore();
  });

  it('spreads tasks over the pilots, the least loaded (bound cores per core) first', () => {
    const { rec, core } = setup(SMALL, BIG, SMALL2);
    const uids = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    core.onTasks(uids.map((u) => pending(u)));
    expect(rec.take()).toEqual([
      placedLine(uids),
      'forward a->p1, b->p2, c->p3, d->p2, e->p2, f->p2, g->p1',
    ]);
    rec.expectNoMore();
  });

  it('gives a pilot plain function calls to fill its lanes twice over, apart from the room of other tasks', () => {
    const TWO: PilotCapacity = { uid: 'p1', cores: 2, gpus: 0 };
    const { rec, core } = setup(TWO);
    const fn = { mode: 'function' as const, function: { module: '/m.js' } };
    const room = 2 * 2 * LANE_DEPTH; // LANE_DEPTH per core in its lanes, as many waiting there
    const calls = Array.from({ length: room + 1 }, (_, i) => pending(`c${i}`, fn));
    core.onTasks(calls);
    const forwarded = (): string[] => rec.take()[1]!.replace('forward ', '').split(', ');
    expect(forwarded()).toEqual(calls.slice(0, room).map((t) => `${t.uid}->p1`));
    core.onReturned([{ uid: 'c0' }]);
    expect(rec.take()).toEqual([
      `notify c${room} TMGR_STAGING_INPUT_PENDING`,
      `forward c${room}->p1`,
    ]);
    // the calls held take nothing of the room of other tasks: its size plus a backlog of 64;
    // a call with a timeout is not a lane call, it takes a core of that room
    const others = [pending('timed', { ...fn, timeoutS: 5 })];
    for (let i = 0; i < 2 + 64; i++) others.push(pending(`x${i}`));
    core.onTasks(others);
    const placed = forwarded();
    expect(placed).toHaveLength(2 + 64);
    expect(placed[0]).toBe('timed->p1');
    expect(placed).not.toContain('x65->p1');
    rec.expectNoMore();
  });

  it('spreads tasks over the pilots a task can ever fit, skipping the others', () => {
    const { rec, core } = setup(SMALL, BIG, SMALL2);
    const tasks = [
      pending('s1'),
      pending('big1', { coresPerRank: 8 }),
      pending('s2'),
      pending('gpu', { gpusPerRank: 1 }),
      pending('mpi', { ranks: 2, coresPerRank: 3 }), // 6 cores in all: only p2
      pending('s3'),
      pending('s4'),
    ];
    core.onTasks(tasks);
    expect(rec.take()).toEqual([
      placedLine(tasks.map((t) => t.uid)),
      'forward s1->p1, big1->p2, s2->p3, gpu->p2, mpi->p2, s3->p1, s4->p3',
    ]);
    rec.expectNoMore();
  });

  it('keeps tasks waiting while it has no pilot and sends them out when one is added', () => {
    const { rec, core } = setup();
    const t = pending('t1');
    core.onTasks([t, pending('t2')]);
    expect(rec.take()).toEqual(['notify t1 TMGR_SCHEDULING, t2 TMGR_SCHEDULING']);
    expect(t.state).toBe('TMGR_SCHEDULING');
    expect(core.queued).toBe(2);
    core.onPilotAdded({ ...SMALL, active: true });
    expect(rec.take()).toEqual([
      'notify t1 TMGR_STAGING_INPUT_PENDING, t2 TMGR_STAGING_INPUT_PENDING',
      'forward t1->p1, t2->p1',
    ]);
    expect(core.queued).toBe(0);
    rec.expectNoMore();
  });

  it('fails waiting tasks that the first added pilot can never fit', () => {
    const { rec, notes, core } = setup();
    core.onTasks([pending('big', { coresPerRank: 8 }), pending('ok')]);
    rec.take();
    core.onPilotAdded({ ...SMALL, active: true });
    expect(rec.take()).toEqual([
      'notify big FAILED, ok TMGR_STAGING_INPUT_PENDING',
      'forward ok->p1',
    ]);
    expect(notes.find((n) => n.uid === 'big' && n.state === 'FAILED')?.detail?.reason?.code).toBe(
      'E_NEVER_FITS',
    );
    rec.expectNoMore();
  });

  it('does nothing when a pilot is added and nothing waits, and ignores a pilot added twice', () => {
    const { rec, core } = setup(SMALL);
    core.onPilotAdded({ ...SMALL, active: true });
    core.onPilotAdded({ ...BIG, active: true });
    rec.expectNoMore();
    core.onTasks(['a', 'b', 'c'].map((u) => pending(u)));
    // p1 counted once, not twice
    expect(rec.take()).toEqual([placedLine(['a', 'b', 'c']), 'forward a->p1, b->p2, c->p2']);
    rec.expectNoMore();
  });

  it('updates a pilot added again with the capacity its agent reported', () => {
    const { rec, core } = setup({ uid: 'p1', cores: 2, gpus: 0 });
    core.onPilotAdded({ uid: 'p1', cores: 8, gpus: 0 });
    rec.expectNoMore();
    core.onTasks([pending('wide', { coresPerRank: 6 })]);
    expect(rec.take()).toEqual([placedLine(['wide']), 'forward wide->p1']);
    rec.expectNoMore();
  });

  it('takes the capacity an agent reported only for pilots it was given', () => {
    const { rec, core } = setup({ uid: 'p1', cores: 2, gpus: 0 });
    core.onPilotActive({ uid: 'p1', cores: 4, gpus: 1 });
    core.onPilotActive({ uid: 'stranger', cores: 64, gpus: 8 });
    core.onTasks([pending('gpu', { coresPerRank: 4, gpusPerRank: 1 })]);
    expect(rec.take()).toEqual([placedLine(['gpu']), 'forward gpu->p1']);
    core.onTasks([pending('big', { coresPerRank: 64 })]);
    expect(rec.take()).toEqual(['notify big TMGR_SCHEDULING, big FAILED']);
    rec.expectNoMore();
  });

  it('fails no task on the size estimated before a pilot is up: it waits for what the agent reports', () => {
    // a 2-node Slurm pilot whose nodes sinfo could not size: 1 core per node is a guess
    const { rec, core } = setup();
    core.onPilotAdded({ uid: 'p1', cores: 2, gpus: 0 });
    const wide = pending('wide', { ranks: 2, coresPerRank: 2 });
    const pinned = pending('pinned', { ranks: 2, coresPerRank: 2, pilot: 'p1' });
    const huge = pending('huge', { coresPerRank: 64 });
    core.onTasks([wide, pinned, huge]);
    expect(rec.take()).toEqual([
      'notify wide TMGR_SCHEDULING, pinned TMGR_SCHEDULING, huge TMGR_SCHEDULING',
    ]);
    expect(core.whyWaiting('wide')?.message).toBe(
      'waiting for a pilot to become active: p1 not active yet (the size of p1 is known once its ' +
        'agent reports: estimated 2 cores, 0 GPUs)',
    );
    // the agent is up: 2 nodes of 2 cores; what fits is placed, what never can fails, with the real size
    core.onPilotActive({ uid: 'p1', cores: 4, gpus: 0 });
    expect(rec.take()).toEqual([
      'notify huge FAILED, wide TMGR_STAGING_INPUT_PENDING, pinned TMGR_STAGING_INPUT_PENDING',
      'forward wide->p1, pinned->p1',
    ]);
    expect(huge.reason?.message).toContain('(p1: 4 cores, 0 GPUs)');
    rec.expectNoMore();
  });

  it('fails a task that fits no reported pilot once the last estimated one is gone', () => {
    const { rec, core } = setup(SMALL);
    core.onPilotAdded({ uid: 'p2', cores: 2, gpus: 0 }); // not up: its size is a guess
    const big = pending('big', { coresPerRank: 8 });
    core.onTasks([big]);
    expect(rec.take()).toEqual(['notify big TMGR_SCHEDULING']);
    core.onPilotGone('p2', 'FAILED');
    expect(rec.take()).toEqual(['notify big FAILED']);
    expect(big.reason).toMatchObject({
      code: 'E_NEVER_FITS',
      message: expect.stringContaining('(p1: 4 cores, 0 GPUs)'),
    });
    rec.expectNoMore();
  });

  it('fails a task no pilot can ever fit with E_NEVER_FITS, listing what it asked and every pilot', () => {
    const { rec, notes, core } = setup(SMALL, BIG);
    const t = pending('huge', { ranks: 2, coresPerRank: 10, gpusPerRank: 1 });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify huge TMGR_SCHEDULING, huge FAILED']);
    expect(t.state).toBe('FAILED');
    expect(t.pilot).toBeUndefined();
    expect(t.reason).toEqual({
      code: 'E_NEVER_FITS',
      message:
        'task asks 2 rank(s) x 10 cores and 1 GPUs per rank; no pilot can ever hold it ' +
        '(p1: 4 cores, 0 GPUs; p2: 16 cores, 2 GPUs)',
      component: 'ManagerScheduler',
      detail: { asked: { ranks: 2, coresPerRank: 10, gpusPerRank: 1 } },
    });
    expect(notes.at(-1)?.detail).toEqual({ reason: t.reason });
    rec.expectNoMore();
  });

  it('with finalOnly, places as usual but notifies only the final states it decides', () => {
    const h = new CoreHarness();
    const effects = {
      ...h.effects({
        forward: (ts: TaskRecord[]) =>
          h.rec.record(`forward ${ts.map((t) => `${t.uid}->${t.pilot ?? '?'}`).join(', ')}`),
      }),
      finalOnly: true,
    };
    const core = new ManagerSchedulerCore(effects, h.clock);
    core.onPilotAdded({ ...SMALL, active: true });
    const ok = pending('ok');
    const huge = pending('huge', { coresPerRank: 64 });
    core.onTasks([ok, huge]);
    expect(h.rec.take()).toEqual(['notify huge FAILED', 'forward ok->p1']);
    expect(ok.state).toBe('TMGR_STAGING_INPUT_PENDING');
    expect(huge.reason?.code).toBe('E_NEVER_FITS');
    h.rec.expectNoMore();
  });

  it('fails a task asking more GPUs than any pilot has', () => {
    const { rec, core } = setup(SMALL, BIG);
    const t = pending('g', { gpusPerRank: 3 });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify g TMGR_SCHEDULING, g FAILED']);
    expect(t.reason?.code).toBe('E_NEVER_FITS');
    expect(t.reason?.message).toContain('3 GPUs per rank');
    rec.expectNoMore();
  });

  it('sends a task pinned to a present pilot there, whatever the load', () => {
    const { rec, core } = setup(SMALL, BIG);
    core.onTasks([
      pending('pin', { pilot: 'p2' }),
      pending('a'),
      pending('pin2', { pilot: 'p2' }),
      pending('b'),
    ]);
    expect(rec.take()).toEqual([
      placedLine(['pin', 'a', 'pin2', 'b']),
      'forward pin->p2, a->p1, pin2->p2, b->p2',
    ]);
    rec.expectNoMore();
  });

  it('fails a task pinned to a pilot that can never fit it, naming only that pilot', () => {
    const { rec, core } = setup(SMALL, BIG);
    const t = pending('pin', { pilot: 'p1', coresPerRank: 8 });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify pin TMGR_SCHEDULING, pin FAILED']);
    expect(t.reason?.code).toBe('E_NEVER_FITS');
    expect(t.reason?.message).toContain('(p1: 4 cores, 0 GPUs)');
    rec.expectNoMore();
  });

  it.each<[string, PilotCapacity[], string]>([
    [
      'pilots added',
      [SMALL, BIG],
      "pinned pilot 'px' is not added to this task manager (pilots: p1, p2)",
    ],
    ['no pilot at all', [], "pinned pilot 'px' is not added to this task manager (pilots: none)"],
  ])(
    'fails a task pinned to an unknown pilot with E_NO_SUCH_PILOT at once (%s)',
    (_what, pilots, message) => {
      const { rec, notes, core } = setup(...pilots);
      const t = pending('pin', { pilot: 'px' });
      core.onTasks([t]);
      expect(rec.take()).toEqual(['notify pin TMGR_SCHEDULING, pin FAILED']);
      const why = { code: 'E_NO_SUCH_PILOT', message, component: 'ManagerScheduler' };
      expect(t.reason).toEqual(why);
      expect(notes.at(-1)?.detail).toEqual({ reason: why });
      expect(core.queued).toBe(0);
      rec.expectNoMore();
    },
  );

  it('fails a task pinned to a pilot that has ended with E_NO_SUCH_PILOT saying so', () => {
    const { rec, core } = setup(SMALL, BIG);
    core.onPilotGone('p1', 'FAILED');
    rec.expectNoMore();
    const t = pending('pin', { pilot: 'p1' });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify pin TMGR_SCHEDULING, pin FAILED']);
    expect(t.reason).toEqual({
      code: 'E_NO_SUCH_PILOT',
      message: "pinned pilot 'p1' has ended (FAILED)",
      component: 'ManagerScheduler',
    });
    rec.expectNoMore();
  });

  it('sends no task to a pilot that has gone, nor to one re-added after it went', () => {
    const { rec, core } = setup(SMALL, BIG, SMALL2);
    core.onPilotGone('p1', 'FAILED');
    core.onPilotAdded({ ...SMALL, active: true });
    rec.expectNoMore();
    const uids = ['a', 'b', 'c', 'd'];
    core.onTasks(uids.map((u) => pending(u)));
    const calls = rec.take();
    expect(calls[0]).toBe(placedLine(uids));
    expect(calls[1]).not.toContain('->p1');
    expect(calls).toHaveLength(2);
    rec.expectNoMore();
  });

  it('fails a task only the gone pilot could fit', () => {
    const { rec, core } = setup(SMALL, BIG);
    core.onPilotGone('p2', 'FAILED');
    const t = pending('big', { coresPerRank: 8 });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify big TMGR_SCHEDULING, big FAILED']);
    expect(t.reason?.message).toContain('(p1: 4 cores, 0 GPUs)');
    rec.expectNoMore();
  });

  it('fails tasks once every pilot added has ended, naming them, until another is added', () => {
    const { rec, core } = setup();
    core.onTasks([pending('w')]); // no pilot yet: waits
    expect(rec.take()).toEqual(['notify w TMGR_SCHEDULING']);
    core.onPilotGone('p1', 'FAILED'); // ended before it was added (a failed launch)
    core.onPilotGone('unknown', 'DONE'); // never added: says nothing about these tasks
    rec.expectNoMore();
    core.onPilotAdded({ ...SMALL, active: true });
    const failed = ['notify w FAILED'];
    expect(rec.take()).toEqual(failed);
    const t = pending('t1');
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t1 TMGR_SCHEDULING, t1 FAILED']);
    expect(t.reason).toEqual({
      code: 'E_NO_PILOT',
      message:
        'every pilot the task could go to has ended: p1 (FAILED); add a live pilot to run such tasks',
      component: 'ManagerScheduler',
      detail: { pilots: ['p1'] },
    });
    core.onPilotAdded({ ...BIG, active: true });
    core.onTasks([pending('t2')]);
    expect(rec.take()).toEqual([
      'notify t2 TMGR_SCHEDULING, t2 TMGR_STAGING_INPUT_PENDING',
      'forward t2->p2',
    ]);
    core.onPilotGone('p2', 'CANCELED');
    core.onTasks([pending('t3')]);
    expect(rec.take()).toEqual(['notify t3 TMGR_SCHEDULING, t3 FAILED']);
    rec.expectNoMore();
  });

  it('cancels a waiting task at once and never sends it', () => {
    const { rec, notes, core } = setup();
    const a = pending('a');
    core.onTasks([a, pending('b')]);
    rec.take();
    core.onCancel(['a', 'nobody']);
    expect(rec.take()).toEqual(['notify a CANCELED']);
    expect(a.state).toBe('CANCELED');
    expect(notes.at(-1)?.detail).toEqual({ reason: canceledByUser('ManagerScheduler') });
    expect(core.queued).toBe(1);
    core.onPilotAdded({ ...SMALL, active: true });
    expect(rec.take()).toEqual(['notify b TMGR_STAGING_INPUT_PENDING', 'forward b->p1']);
    rec.expectNoMore();
  });

  it('cancels a task on receipt when its cancel came first', () => {
    const { rec, core } = setup(SMALL);
    core.onCancel(['late']);
    rec.expectNoMore();
    const t = pending('late');
    core.onTasks([t, pending('other')]);
    expect(rec.take()).toEqual([
      'notify late CANCELED, other TMGR_SCHEDULING, other TMGR_STAGING_INPUT_PENDING',
      'forward other->p1',
    ]);
    expect(t.state).toBe('CANCELED');
    expect(t.pilot).toBeUndefined();
    rec.expectNoMore();
  });

  it('does nothing on a cancel for a task it has already handed on', () => {
    const { rec, core } = setup(SMALL);
    const t = pending('t1');
    core.onTasks([t]);
    rec.take();
    core.onCancel(['t1']);
    expect(t.state).toBe('TMGR_STAGING_INPUT_PENDING');
    rec.expectNoMore();
  });

  it.each(['FAILED', 'CANCELED'] as const)('ends every waiting task %s on shutdown', (final) => {
    const { rec, notes, core } = setup();
    const a = pending('a');
    core.onTasks([a, pending('b')]);
    rec.take();
    core.onShutdown(final, SESSION_CLOSED);
    expect(rec.take()).toEqual([`notify a ${final}, b ${final}`]);
    expect(a.state).toBe(final);
    expect(notes.at(-1)?.detail).toEqual({ reason: SESSION_CLOSED });
    expect(core.queued).toBe(0);
    core.onShutdown(final, SESSION_CLOSED);
    core.onPilotAdded({ ...SMALL, active: true });
    rec.expectNoMore();
  });

  it('makes one notify and one forward call per handler call, however big the bulk', () => {
    const { rec, core } = setup();
    const tasks = Array.from({ length: 100 }, (_, i) => pending(`t${i}`));
    core.onTasks(tasks);
    expect(rec.take().map((c) => c.split(' ')[0])).toEqual(['notify']);
    core.onPilotAdded({ uid: 'wide', cores: 1000, gpus: 0, active: true });
    expect(rec.take().map((c) => c.split(' ')[0])).toEqual(['notify', 'forward']);
    core.onTasks([
      ...Array.from({ length: 50 }, (_, i) => pending(`u${i}`)),
      pending('x', { coresPerRank: 99 }),
    ]);
    expect(rec.take().map((c) => c.split(' ')[0])).toEqual(['notify', 'forward']);
    rec.expectNoMore();
  });

  describe('hand-over', () => {
    handOverTests({
      from: 'TMGR_SCHEDULING_PENDING',
      setup,
      setupOthers: () => setup(SMALL),
      pending,
      finish: (s) => s.core.onPilotAdded({ ...SMALL, active: true }),
      walk: ['TMGR_SCHEDULING', 'TMGR_STAGING_INPUT_PENDING'],
      bulk: {
        wrong: 'NEW',
        after: (s) => {
          expect(s.core.queued).toBe(0);
          s.core.onPilotAdded({ ...SMALL, active: true }); // nothing was held back
        },
      },
    });
  });
});
