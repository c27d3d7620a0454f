import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  AgentSchedulerCore,
  type NodeResources,
} from '../../../../src/components/agent-scheduler/core';
import { DEFAULT_LAUNCHERS } from '../../../../src/components/agent-scheduler/launchers';
import {
  WAIT_REPORT_MS,
  type ShapeWait,
} from '../../../../src/components/agent-scheduler/wait-reports';
import { needsLauncher } from '../../../../src/components/executor/launch';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import {
  AGENT_SHUTDOWN,
  canceledByUser,
  CoreHarness,
  taskRecord,
} from '../../../support/core-harness';

function nodes(n: number, cores = 2): NodeResources[] {
  return Array.from({ length: n }, (_, i) => ({ name: `n${i}`, cores, gpus: 0, memMb: 8_192 }));
}

/** The agent's node n0, and n - 1 nodes labelled `role: compute` (2 cores each). */
function cluster(n: number): NodeResources[] {
  return nodes(n).map((node, i) => (i === 0 ? node : { ...node, labels: { role: 'compute' } }));
}

/** As a Slurm agent on n0 judges: several ranks, or one rank off n0, start through srun. */
const ALLOCATION = { agentNode: { name: 'n0' }, srun: { executable: 'srun' } };

/** A simpler rule for tests of the order: a task of several ranks needs a launcher. */
const multiRank = (t: TaskRecord): boolean => (t.description.ranks ?? 1) > 1;

interface Options {
  max?: number;
  nodes?: NodeResources[];
  backfillLimit?: number;
  needs?: (t: TaskRecord) => boolean;
}

/**
 * A scheduler that caps launcher tasks at `max` (default: the agent's predicate, on an
 * allocation whose agent runs on n0); it records the tasks the predicate was asked about, with
 * the nodes of their slots then.
 */
function setup(o: Options = {}) {
  const h = new CoreHarness();
  const reports: ShapeWait[][] = [];
  const asked: { uid: string; nodes: string[] }[] = [];
  const judge = o.needs ?? ((t: TaskRecord) => needsLauncher(t, ALLOCATION));
  const needs = (t: TaskRecord): boolean => {
    asked.push({ uid: t.uid, nodes: (t.slots ?? []).map((x) => x.node) });
    return judge(t);
  };
  const reportWaits = (ws: ShapeWait[]): void => void reports.push(ws);
  const core = new AgentSchedulerCore(
    h.effects({ reportWaits }),
    h.clock,
    o.nodes ?? cluster(9),
    'n0',
    undefined,
    o.backfillLimit,
    false,
    { max: o.max, needs },
  );
  const running = new Set<string>();
  const records = new Map<string, TaskRecord>();
  /** What the scheduler handed on since the last call, by uid, in order. */
  const started = (): string[] => {
    const out = h.forwarded.splice(0);
    for (const t of out) {
      running.add(t.uid);
      records.set(t.uid, t);
    }
    h.rec.take();
    return out.map((t) => t.uid);
  };
  const submit = (...tasks: TaskRecord[]): string[] => {
    core.onTasks(tasks);
    return started();
  };
  const release = (...uids: string[]): string[] => {
    for (const uid of uids) running.delete(uid);
    core.onReleased(uids.map((uid) => ({ uid })));
    return started();
  };
  /** Lets the report timer fire; the last report's entries. */
  const report = (): ShapeWait[] => {
    h.clock.advance(WAIT_REPORT_MS);
    return reports.at(-1) ?? [];
  };
  const freeCores = (): number => core.freeCapacity().reduce((n, c) => n + c.cores, 0);
  return Object.assign(h, { core, asked, running, records, submit, release, report, freeCores });
}

function pending(uid: string, description: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'AGENT_SCHEDULING_PENDING', { description });
}

/** A two-node task on the compute nodes: one rank of 2 cores on each of two (srun). */
const TWO_NODE: Partial<TaskDescription> = {
  ranks: 2,
  coresPerRank: 2,
  placement: { selector: { role: 'compute' } },
};
/** The same, anywhere. */
const TWO_ANY: Partial<TaskDescription> = { ranks: 2, coresPerRank: 2 };

const burst = (n: number, d = TWO_NODE): TaskRecord[] =>
  Array.from({ length: n }, (_, i) => pending(`m${String(i).padStart(3, '0')}`, d));

describe('AgentSchedulerCore: agent.launchers', () => {
  it('a burst of two-node tasks runs at most the cap at once, each next one as one ends, in order', () => {
    // 8 compute nodes hold 4 such tasks at once: the cap (3), not the nodes, bounds them
    const s = setup({ max: 3 });
    const tasks = burst(200);
    const order = s.submit(...tasks);
    expect(order).toEqual(['m000', 'm001', 'm002']);
    // the waiting ones hold no slots: only the 3 running tasks' 12 cores are taken
    expect(s.freeCores()).toBe(18 - 12);
    let most = s.running.size;
    while (s.running.size > 0) {
      const next = s.release([...s.running][0]!);
      expect(next.length).toBeLessThanOrEqual(1);
      order.push(...next);
      most = Math.max(most, s.running.size);
    }
    expect(most).toBe(3);
    expect(order).toEqual(tasks.map((t) => t.uid)); // every one, in submission order
    expect(s.core.queued).toBe(0);
    expect(s.freeCores()).toBe(18);
  });

  it('judges each task on the slots it was placed on, before it starts', () => {
    const s = setup({ max: 1 });
    s.submit(pending('wide', TWO_NODE));
    const [first] = s.asked;
    expect(first).toEqual({ uid: 'wide', nodes: [expect.any(String), expect.any(String)] });
    // one rank that lands off the agent's node needs srun too: it waits, its slot given back
    const off = ['n1', 'n2', 'n3'].find((n) => !first!.nodes.includes(n))!;
    const free = s.freeCores();
    expect(s.submit(pending('off', { coresPerRank: 2, placement: { node: off } }))).toEqual([]);
    expect(s.asked.at(-1)).toEqual({ uid: 'off', nodes: [off] });
    expect(s.freeCores()).toBe(free);
    expect(s.core.freeCapacity().find((n) => n.node === off)?.cores).toBe(2);
    expect(s.release('wide')).toEqual(['off']);
  });

  it('tasks that need no launcher start past the waiting ones, on the cores those do not hold', () => {
    const s = setup({ max: 1 });
    expect(s.submit(...burst(3))).toEqual(['m000']);
    // forked on the agent's node (one rank), and a function call: neither needs a launcher
    const forked = [0, 1].map((i) => pending(`f${i}`, { placement: { node: 'n0' } }));
    const call = pending('fn', { mode: 'function', function: { module: 'm.js', export: 'f' } });
    expect(s.submit(...forked, call)).toEqual(['f0', 'f1']);
    expect(s.release('f0')).toEqual(['fn']); // on n0 too; a fork task's end starts no m task
    expect(s.release('m000')).toEqual(['m001']);
  });

  it('a task waiting for a launcher is no head: no nodes are reserved for it', () => {
    // strict order (backfillLimit 0) reserves for a head that does not fit at once
    const s = setup({ max: 1, nodes: nodes(4), backfillLimit: 0, needs: multiRank });
    expect(s.submit(pending('a', TWO_ANY), pending('b', TWO_ANY))).toEqual(['a']);
    expect(s.core.reservedFor).toBeUndefined();
    expect(s.submit(pending('f1', { coresPerRank: 2 }))).toEqual(['f1']);
    expect(s.release('a')).toEqual(['b']);
  });

  it('one that has a launcher but no room waits for nodes like any other, and holds them', () => {
    const s = setup({ max: 1, nodes: nodes(5), backfillLimit: 0, needs: multiRank });
    expect(s.submit(pending('a', TWO_ANY))).toEqual(['a']);
    expect(s.submit(pending('wide', { ranks: 3, coresPerRank: 2 }))).toEqual([]);
    expect(s.report().map((w) => w.reason?.kind)).toEqual(['launchers']);
    const fs = [1, 2, 3].map((i) => pending(`f${i}`, { coresPerRank: 2 }));
    expect(s.submit(...fs)).toEqual(['f1', 'f2', 'f3']);
    expect(s.release('a')).toEqual([]); // a launcher, but 2 free nodes of the 3 it needs
    expect(s.report().map((w) => w.reason?.kind)).toEqual(['resources']);
    expect(s.core.reservedFor).toBe('wide');
    expect(s.release('f1')).toEqual(['wide']);
  });

  it('a colocate group its placement opened is let go with the slots', () => {
    // n1..n3 are compute nodes, n0 is not; the group's first task waits, pinned to n0
    const s = setup({ max: 1, needs: multiRank, nodes: cluster(4) });
    expect(s.submit(pending('a', TWO_NODE))).toEqual(['a']);
    const g1 = { ranks: 2, placement: { node: 'n0' }, tags: { colocate: 'g' } };
    expect(s.submit(pending('g1', g1))).toEqual([]);
    expect(s.submit(pending('f', { coresPerRank: 2, placement: { node: 'n0' } }))).toEqual(['f']);
    // n0 is full: a task of the group goes where there is room, as if g1 had never been placed
    expect(s.submit(pending('g2', { tags: { colocate: 'g' } }))).toEqual(['g2']);
  });

  it('the next to start is the first waiting by priority, then submission', () => {
    const s = setup({ max: 1 });
    s.submit(pending('run', TWO_NODE));
    s.submit(pending('low', TWO_NODE), pending('high', { ...TWO_NODE, priority: 5 }));
    s.submit(pending('low2', { ...TWO_NODE, coresPerRank: 1 })); // another shape, later
    expect(s.release('run')).toEqual(['high']);
    expect(s.release('high')).toEqual(['low']);
    expect(s.release('low')).toEqual(['low2']);
  });

  it('a waiting launcher task canceled ends CANCELED at once; the next one takes its turn', () => {
    const s = setup({ max: 1 });
    s.submit(...burst(3));
    s.core.onCancel(['m001']);
    expect(s.notes.at(-1)).toMatchObject({ uid: 'm001', state: 'CANCELED' });
    expect(s.notes.at(-1)?.detail).toEqual({ reason: canceledByUser('AgentScheduler') });
    s.rec.take();
    expect(s.release('m000')).toEqual(['m002']);
    expect(s.core.queued).toBe(0);
  });

  it('a canceled running launcher task gives its launcher back when its slots come back', () => {
    const s = setup({ max: 2 });
    s.submit(...burst(3));
    s.core.onCancel(['m000']); // running: the Executor kills it, then releases it
    s.rec.take();
    expect(s.release('m000')).toEqual(['m002']);
  });

  it("says why: 'launchers', with the count in use and the cap", () => {
    const s = setup({ max: 3 });
    s.submit(...burst(5));
    const at = s.clock.now(); // the first report after a quiet spell comes at once
    const ws = s.report();
    expect(ws).toHaveLength(1); // one shape: its first waiting task speaks for it
    expect(ws[0]).toMatchObject({ task: 'm003', attempt: 1 });
    expect(ws[0]!.reason).toEqual({
      kind: 'launchers',
      message:
        "waiting for a launcher: 3 of 3 in use (the pilot's agent.launchers: tasks started by " +
        'srun or mpirun that run at once)',
      component: 'AgentScheduler',
      ts: at,
      asks: { ranks: 2, cores: 2, gpus: 0, memMb: 0 },
      launchers: { inUse: 3, limit: 3 },
    });
    // the next one names itself once the first has started
    s.release('m000');
    expect(s.report()[0]).toMatchObject({ task: 'm004', reason: { kind: 'launchers' } });
    // and the shape's reason goes when none of it waits any more
    s.release('m001');
    expect(s.report()).toEqual([{ shape: ws[0]!.shape }]);
  });

  it('estimated starts count launchers as the scheduler does', () => {
    const s = setup({ max: 2, nodes: nodes(1, 16), needs: multiRank });
    const mpi = (uid: string, walltimeS: number) => pending(uid, { ranks: 2, walltimeS });
    s.submit(mpi('a', 10), mpi('b', 20), mpi('c', 5), mpi('d', 5), mpi('e', 5));
    const [w] = s.report();
    // c gets a's launcher at 10, d c's at 15, e b's at 20; cores were free all along
    expect(
      w!.starts!.map((x) => [x.task, (x.at - (s.clock.now() - WAIT_REPORT_MS)) / 1000]),
    ).toEqual([
      ['c', 10],
      ['d', 15],
      ['e', 20],
    ]);
  });

  it(`caps at ${DEFAULT_LAUNCHERS} when the pilot sets none`, () => {
    const s = setup({ nodes: cluster(201) });
    expect(s.submit(...burst(80))).toHaveLength(DEFAULT_LAUNCHERS);
  });

  it('waiting launcher tasks end with the agent', () => {
    const s = setup({ max: 1 });
    s.submit(...burst(3));
    s.core.onShutdown('FAILED', AGENT_SHUTDOWN);
    expect(s.notes.slice(-2).map((n) => [n.uid, n.state])).toEqual([
      ['m001', 'FAILED'],
      ['m002', 'FAILED'],
    ]);
  });

  it('never runs more launcher tasks than the cap, and runs every task, whatever the mix', () => {
    const tagsArb = fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constant({ colocate: 'g' }) },
      { weight: 1, arbitrary: fc.constant({ exclusive: 'x' }) },
    );
    const taskArb = fc
      .record({
        ranks: fc.integer({ min: 1, max: 3 }),
        coresPerRank: fc.integer({ min: 1, max: 2 }),
        priority: fc.integer({ min: 0, max: 1 }),
        tags: tagsArb,
      })
      .map(({ tags, ...d }): Partial<TaskDescription> => (tags === undefined ? d : { ...d, tags }));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 4 }),
        fc.array(taskArb, { minLength: 1, maxLength: 30 }),
        fc.array(fc.nat(), { minLength: 30, maxLength: 30 }),
        (max, n, backfillLimit, descs, picks) => {
          const s = setup({ max, nodes: nodes(n), backfillLimit });
          const tasks = descs.map((d, i) => pending(`t${i}`, d));
          const half = tasks.length >> 1;
          const seen: string[] = [];
          const check = (uids: string[]): void => {
            seen.push(...uids);
            const held = [...s.running].filter((u) => needsLauncher(s.records.get(u)!, ALLOCATION));
            expect(held.length).toBeLessThanOrEqual(max);
          };
          check(s.submit(...tasks.slice(0, half)));
          // the rest arrive after the first end (or at once if none runs): arrivals while some wait
          let k = 0;
          let arrived = false;
          for (;;) {
            if (!arrived && (k === 1 || s.running.size === 0)) {
              check(s.submit(...tasks.slice(half)));
              arrived = true;
            }
            if (s.running.size === 0) break;
            const run = [...s.running];
            check(s.release(run[picks[k++ % picks.length]! % run.length]!));
          }
          // nothing is left waiting once nothing runs, every task that fits ran, and every
          // slot a task waiting for a launcher was placed on came back
          expect(s.core.queued).toBe(0);
          expect(s.freeCores()).toBe(2 * n);
          const failed = s.notes.filter((x) => x.state === 'FAILED').map((x) => x.uid);
          expect(new Set([...seen, ...failed]).size).toBe(tasks.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});
