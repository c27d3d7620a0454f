import { describe, expect, it } from '@jest/globals';
import {
  AgentSchedulerCore,
  type NodeResources,
} from '../../../../src/components/agent-scheduler/core';
import { PLANNED_TASKS } from '../../../../src/components/agent-scheduler/start-plan';
import {
  WAIT_REPORT_MS,
  type ShapeWait,
} from '../../../../src/components/agent-scheduler/wait-reports';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import { CoreHarness, taskRecord } from '../../../support/core-harness';

function node(name: string, cores: number): NodeResources {
  return { name, cores, gpus: 0, memMb: 8_192 };
}

/** A scheduler whose reports are kept; `starts()` reads the latest estimate of each task. */
function setup(nodes: readonly NodeResources[], backfillLimit = 0) {
  const h = new CoreHarness();
  const t0 = h.clock.now();
  const byShape = new Map<string, ShapeWait>();
  const core = new AgentSchedulerCore(
    h.effects({ reportWaits: (ws: ShapeWait[]) => ws.forEach((w) => byShape.set(w.shape, w)) }),
    h.clock,
    [...nodes],
    undefined,
    undefined,
    backfillLimit,
  );
  const submit = (...tasks: TaskRecord[]): void => core.onTasks(tasks);
  const release = (...uids: string[]): void => core.onReleased(uids.map((uid) => ({ uid })));
  /** Lets a report come, then: task -> estimated start in s after t0, or the reason it has none. */
  const starts = (): Record<string, number | string> => {
    h.clock.advance(WAIT_REPORT_MS);
    const out: Record<string, number | string> = {};
    for (const w of byShape.values()) {
      for (const s of w.starts ?? []) out[s.task] = (s.at - t0) / 1000;
      if (w.noEstimate !== undefined) out[`${w.task!}…`] = w.noEstimate;
    }
    return out;
  };
  return Object.assign(h, { core, submit, release, starts, t0, byShape });
}

function pending(uid: string, description: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'AGENT_SCHEDULING_PENDING', { description });
}

const UNKNOWN =
  'no estimate: the capacity it needs is held by tasks that declare neither walltimeS nor timeoutS';

describe('AgentSchedulerCore: estimated starts', () => {
  it('a waiting task starts in the plan when a running task reaches its walltimeS', () => {
    const s = setup([node('n0', 4)]);
    s.submit(
      ...[10, 20, 30, 40].map((w, i) => pending(`r${i}`, { walltimeS: w })),
      ...[1, 2, 3, 4].map((i) => pending(`w${i}`, { walltimeS: 10 })),
    );
    // 10 s: r0 ends, w1 starts; 20 s: r1 and w1 end, w2 and w3 start; 30 s: r2, w2, w3 end
    expect(s.starts()).toEqual({ w1: 10, w2: 20, w3: 20, w4: 30 });
  });

  it('timeoutS bounds a run: it counts when shorter than walltimeS, or alone', () => {
    const s = setup([node('n0', 2)]);
    s.submit(
      pending('r0', { timeoutS: 7 }),
      pending('r1', { walltimeS: 50, timeoutS: 5 }),
      pending('w1'),
      pending('w2'),
    );
    expect(s.starts()).toEqual({ w1: 5, w2: 7 });
  });

  it('a multi-node task waits in the plan until every node it needs is free', () => {
    const s = setup([node('n0', 2), node('n1', 2)]);
    s.submit(
      pending('r0', { coresPerRank: 2, walltimeS: 30 }),
      pending('r1', { coresPerRank: 2, walltimeS: 12 }),
      pending('mpi', { ranks: 2, coresPerRank: 2, walltimeS: 5 }),
    );
    expect(s.starts()).toEqual({ mpi: 30 });
  });

  it('priority comes before submission in the plan, as in the scheduler', () => {
    const s = setup([node('n0', 1)]);
    s.submit(pending('r0', { walltimeS: 10 }));
    s.submit(pending('low', { walltimeS: 10 }), pending('high', { walltimeS: 10, priority: 5 }));
    expect(s.starts()).toEqual({ high: 10, low: 20 });
  });

  it('tasks behind a head with a reservation start after it; with backfill they pass it', () => {
    const tasks = () => [
      ...[10, 20, 30, 40].map((w, i) => pending(`r${i}`, { walltimeS: w })),
      pending('big', { coresPerRank: 4, walltimeS: 5 }),
      pending('small', { walltimeS: 3 }),
    ];
    const reserved = setup([node('n0', 4)], 0);
    reserved.submit(...tasks());
    expect(reserved.starts()).toEqual({ big: 40, small: 45 });
    const backfill = setup([node('n0', 4)], 8);
    backfill.submit(...tasks());
    expect(backfill.starts()).toEqual({ big: 40, small: 10 });
  });

  it('a running task with no declared time leaves those that need its slots without estimate', () => {
    const s = setup([node('n0', 2)]);
    s.submit(pending('r0'), pending('r1', { walltimeS: 8 }), pending('w1'), pending('w2'));
    expect(s.starts()).toEqual({ w1: 8, 'w1…': UNKNOWN });
  });

  it('an end that comes early moves the estimates in the next report', () => {
    const s = setup([node('n0', 1)]);
    s.submit(pending('r0', { walltimeS: 60 }), pending('w1', { walltimeS: 10 }));
    expect(s.starts()).toEqual({ w1: 60 });
    s.submit(pending('w2', { walltimeS: 10 }));
    expect(s.starts()).toEqual({ w1: 60, w2: 70 });
    s.release('r0'); // w1 starts now, 1 s in
    expect(s.starts()).toEqual({ w2: 11 });
  });

  it('an overdue task is expected to end any moment', () => {
    const s = setup([node('n0', 1)]);
    s.submit(pending('r0', { walltimeS: 1 }), pending('w1'));
    expect(s.starts()).toEqual({ w1: 1 });
    s.clock.advance(5_000);
    s.submit(pending('w2', { walltimeS: 2 })); // a change: a new report and plan
    expect(s.starts()).toEqual({ w1: 6, 'w1…': UNKNOWN });
  });

  it('a task that would not end before the drain point gets no estimate', () => {
    const s = setup([node('n0', 1)]);
    s.core.setDrainPoint(s.t0 + 30_000);
    s.submit(pending('r0', { walltimeS: 10 }), pending('w1', { walltimeS: 25 }));
    expect(s.starts()).toEqual({
      'w1…': 'no estimate: it would not end before the pilot drains',
    });
  });

  it(`only the first ${PLANNED_TASKS} waiting tasks are planned`, () => {
    const s = setup([node('n0', 1)]);
    const n = PLANNED_TASKS + 2;
    s.submit(...Array.from({ length: n }, (_, i) => pending(`t${i}`, { walltimeS: 1 })));
    const got = s.starts();
    expect(got[`t${PLANNED_TASKS}`]).toBe(PLANNED_TASKS);
    expect(got[`t${PLANNED_TASKS + 1}`]).toBeUndefined();
    expect(got['t1…']).toMatch(/only the first 128 waiting tasks of the pilot are planned/);
  });

  it('tagged tasks and function calls are not planned, and say so', () => {
    const s = setup([node('n0', 1)]);
    s.submit(pending('r0', { walltimeS: 5 }), pending('x', { tags: { exclusive: 'e' } }));
    expect(s.starts()).toEqual({
      'x…': 'no estimate: tasks with colocate or exclusive tags are not planned',
    });
  });

  it.each([
    ['one size, backfill', [], 8],
    ['two sizes, reserved at once', [1, 4, 9], 0],
    ['two sizes, backfill', [1, 4, 9], 4],
  ])(
    'with every task running as long as it declares, the estimates are the starts (%s)',
    (_, wide: number[], backfillLimit: number) => {
      const s = setup([node('n0', 4)], backfillLimit);
      const walls = [7, 3, 5, 11, 2, 9, 4, 6, 8, 1, 12, 5, 3, 7];
      const started = new Map<string, number>();
      const ends = new Map<string, number>();
      const take = (): void => {
        for (const t of s.forwarded.splice(0)) {
          started.set(t.uid, (s.clock.now() - s.t0) / 1000);
          ends.set(t.uid, s.clock.now() + t.description.walltimeS! * 1000);
        }
      };
      s.submit(
        ...walls.map((w, i) =>
          pending(`t${i}`, { walltimeS: w, coresPerRank: wide.includes(i) ? 2 : 1 }),
        ),
      );
      take();
      const estimated = s.starts();
      while (ends.size > 0) {
        const next = Math.min(...ends.values());
        s.clock.advance(next - s.clock.now());
        const done = [...ends].filter(([, at]) => at === next).map(([uid]) => uid);
        for (const uid of done) ends.delete(uid);
        s.release(...done);
        take();
      }
      const waited = [...started].filter(([, at]) => at > 0);
      expect(waited.length).toBeGreaterThan(5);
      expect(Object.fromEntries(waited)).toEqual(estimated);
    },
  );

  it('the real nodes are untouched by a plan: the tasks start as before', () => {
    const s = setup([node('n0', 2)]);
    s.submit(pending('r0', { walltimeS: 5 }), pending('r1', { walltimeS: 5 }), pending('w1'));
    s.starts();
    s.rec.take();
    s.release('r0');
    expect(s.rec.take()).toContain('forward w1');
    expect(s.core.freeCapacity()).toEqual([{ node: 'n0', cores: 0, gpuFree: [], memMb: 8_192 }]);
  });
});
