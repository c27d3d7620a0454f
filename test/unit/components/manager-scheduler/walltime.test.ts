import { describe, expect, it } from '@jest/globals';
import { ManagerSchedulerCore } from '../../../../src/components/manager-scheduler/core';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import { CoreHarness, taskRecord } from '../../../support/core-harness';

/** Pilots as their agents announce them: p1 drains in 60 s, p2 in an hour. */
function setup() {
  const h = new CoreHarness();
  const effects = h.effects({
    forward: (ts: TaskRecord[]) =>
      h.rec.record(`forward ${ts.map((t) => `${t.uid}->${t.pilot ?? '?'}`).join(', ')}`),
  });
  const core = new ManagerSchedulerCore(effects, h.clock);
  for (const uid of ['p1', 'p2']) core.onPilotAdded({ uid, cores: 4, gpus: 0 });
  return Object.assign(h, { core });
}

const pending = (uid: string, d: Partial<TaskDescription> = {}): TaskRecord =>
  taskRecord(uid, 'TMGR_SCHEDULING_PENDING', { description: d });

const forwards = (lines: string[]): string[] => lines.filter((l) => l.startsWith('forward'));

describe('ManagerSchedulerCore and walltimeS', () => {
  it('sends a task only to a pilot that has its walltimeS left before it drains', () => {
    const { core, rec } = setup();
    core.onPilotActive({ uid: 'p1', cores: 4, gpus: 0, drainInMs: 60_000 });
    core.onPilotActive({ uid: 'p2', cores: 4, gpus: 0, drainInMs: 3_600_000 });
    rec.take();
    core.onTasks([pending('long', { walltimeS: 600 }), pending('short', { walltimeS: 30 })]);
    // p1 is the least loaded for 'short' once 'long' went to p2
    expect(forwards(rec.take())).toEqual(['forward long->p2, short->p1']);
  });

  it('waits while a pilot that may have the time is not active yet, and says why', () => {
    const { core, rec, clock } = setup();
    core.onPilotActive({ uid: 'p1', cores: 4, gpus: 0, drainInMs: 60_000 });
    rec.take();
    core.onTasks([pending('long', { walltimeS: 600 })]);
    expect(forwards(rec.take())).toEqual([]);
    clock.advance(1_000);
    expect(core.whyWaiting('long')?.message).toBe(
      'waiting for a pilot with 600 s left (walltimeS): p1 drains in 59 s, p2 not active yet',
    );
    core.onPilotActive({ uid: 'p2', cores: 4, gpus: 0, drainInMs: 3_600_000 });
    expect(forwards(rec.take())).toEqual(['forward long->p2']);
  });

  it('fails a task no pilot has the time for once every pilot is active (E_NO_PILOT_TIME)', () => {
    const { core, rec, notes } = setup();
    core.onPilotActive({ uid: 'p1', cores: 4, gpus: 0, drainInMs: 60_000 });
    core.onPilotActive({ uid: 'p2', cores: 4, gpus: 0, drainInMs: 120_000 });
    rec.take();
    core.onTasks([pending('long', { walltimeS: 600 })]);
    expect(forwards(rec.take())).toEqual([]);
    const failed = notes.find((n) => n.state === 'FAILED');
    expect(failed?.detail?.reason).toEqual({
      code: 'E_NO_PILOT_TIME',
      message:
        'task needs 600 s (walltimeS) and no pilot that can hold it has that long before it drains (p1: 60 s; p2: 120 s)',
      component: 'ManagerScheduler',
      detail: {
        walltimeS: 600,
        pilots: [
          { uid: 'p1', secondsLeft: 60 },
          { uid: 'p2', secondsLeft: 120 },
        ],
      },
    });
  });

  it('fails a queued task once the pilots it waited for have run out of time for it', () => {
    const { core, rec, notes, clock } = setup();
    core.onPilotActive({ uid: 'p1', cores: 4, gpus: 0, drainInMs: 100_000 });
    core.onPilotActive({ uid: 'p2', cores: 4, gpus: 0, drainInMs: 100_000 });
    // each pilot takes 68 cores (4 running, 64 queued): 34 tasks of 4 cores fill both
    const fill = Array.from({ length: 34 }, (_, i) => pending(`f${i}`, { coresPerRank: 4 }));
    core.onTasks([...fill, pending('late', { walltimeS: 60 })]);
    expect(forwards(rec.take())[0]).not.toContain('late');
    expect(core.whyWaiting('late')?.message).toMatch(/^waiting for room on pilot\(s\) p1, p2/);
    clock.advance(45_000); // 55 s left on each: too little for 60
    expect(core.whyWaiting('late')?.message).toBe(
      'waiting for a pilot with 60 s left (walltimeS): p1 drains in 55 s, p2 drains in 55 s',
    );
    core.onReturned([{ uid: 'f0' }]);
    expect(forwards(rec.take())).toEqual([]);
    expect(notes.filter((n) => n.uid === 'late').map((n) => n.state)).toEqual([
      'TMGR_SCHEDULING',
      'FAILED',
    ]);
  });

  it('sends no task to a pilot past its drain point, walltimeS declared or not', () => {
    const { core, rec, clock } = setup();
    core.onPilotActive({ uid: 'p1', cores: 4, gpus: 0, drainInMs: 10_000 });
    core.onPilotActive({ uid: 'p2', cores: 4, gpus: 0, drainInMs: 3_600_000 });
    rec.take();
    clock.advance(10_000);
    core.onTasks([pending('a'), pending('b')]);
    expect(forwards(rec.take())).toEqual(['forward a->p2, b->p2']);
    const only = setup();
    only.core.onPilotActive({ uid: 'p1', cores: 4, gpus: 0, drainInMs: 10_000 });
    only.clock.advance(10_000);
    only.core.onTasks([pending('c')]);
    expect(only.core.whyWaiting('c')?.message).toBe(
      'waiting for a pilot that has not drained: p1 drains in 0 s, p2 not active yet',
    );
  });

  it('fails a task pinned to a pilot that drains before it could end', () => {
    const { core, notes, rec } = setup();
    core.onPilotActive({ uid: 'p1', cores: 4, gpus: 0, drainInMs: 60_000 });
    rec.take();
    core.onTasks([pending('pinned', { walltimeS: 600, pilot: 'p1' })]);
    const failed = notes.find((n) => n.uid === 'pinned' && n.state === 'FAILED');
    expect((failed?.detail?.reason as { code: string }).code).toBe('E_NO_PILOT_TIME');
  });
});
