import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  AgentSchedulerCore,
  type NodeResources,
} from '../../../../src/components/agent-scheduler/core';
import { GPU_UNIT } from '../../../../src/components/agent-scheduler/node-state';
import { IllegalTransitionError } from '../../../../src/errors';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import {
  AGENT_SHUTDOWN,
  canceledByUser,
  CoreHarness,
  handOverTests,
  taskRecord,
  uidsLine,
} from '../../../support/core-harness';

type Slot = NonNullable<TaskRecord['slots']>[number];

const NODE: NodeResources = { name: 'n0', cores: 4, gpus: 2, memMb: 8_192 };

function node(name: string, cores: number, gpus = 0, memMb = 8_192): NodeResources {
  return { name, cores, gpus, memMb };
}

/**
 * A core that reserves for a head that does not fit at once (backfillLimit 0): the order and
 * reservation rules in their strict form. The limit itself is tested on its own (below).
 */
function setup(nodes: readonly NodeResources[] = [NODE], backfillLimit = 0) {
  const h = new CoreHarness();
  const core = new AgentSchedulerCore(
    h.effects({}),
    h.clock,
    [...nodes],
    undefined,
    undefined,
    backfillLimit,
  );
  return Object.assign(h, { core });
}
type Setup = ReturnType<typeof setup>;

function pending(uid: string, description: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'AGENT_SCHEDULING_PENDING', { description });
}

/** Submits tasks that are expected to start at once, and drops the effects of their start. */
function started(s: Setup, ...tasks: TaskRecord[]): void {
  s.core.onTasks(tasks);
  expect(s.rec.take()).toEqual([
    `notify ${[
      ...tasks.map((t) => `${t.uid} AGENT_SCHEDULING`),
      ...tasks.map((t) => `${t.uid} AGENT_EXECUTING_PENDING`),
    ].join(', ')}`,
    uidsLine('forward', tasks),
  ]);
}

/** Submits tasks that are all expected to wait, and drops the notification of their arrival. */
function waiting(s: Setup, ...tasks: TaskRecord[]): void {
  s.core.onTasks(tasks);
  expect(s.rec.take()).toEqual([
    `notify ${tasks.map((t) => `${t.uid} AGENT_SCHEDULING`).join(', ')}`,
  ]);
}

/** A waiting task with its submission number `seq`. */
function submitted(uid: string, seq: number, description: Partial<TaskDescription> = {}) {
  return { ...pending(uid, description), seq };
}

/** On a one-core pilot running `first`: ends the running task n times, naming what starts. */
function startsInTurn(s: Setup, first: string, n: number): string[] {
  const order: string[] = [];
  let last = first;
  for (let i = 0; i < n; i++) {
    s.core.onReleased([{ uid: last }]);
    const calls = s.rec.take();
    expect(calls).toHaveLength(2);
    last = calls[1]!.replace('forward ', '');
    order.push(last);
  }
  return order;
}

const nodesOf = (t: TaskRecord): string[] => (t.slots ?? []).map((sl) => sl.node);

/** Free cores per node name. */
function freeCores(s: Setup): Record<string, number> {
  return Object.fromEntries(s.core.freeCapacity().map((n) => [n.node, n.cores]));
}

function whole(n: NodeResources) {
  return {
    node: n.name,
    cores: n.cores,
    gpuFree: Array.from({ length: n.gpus }, () => GPU_UNIT),
    memMb: n.memMb,
  };
}

describe('AgentSchedulerCore', () => {
  describe('placement', () => {
    it('moves a task through AGENT_SCHEDULING to AGENT_EXECUTING_PENDING with a slot on a node', () => {
      const { rec, clock, notes, core } = setup();
      expect(core.freeCapacity()).toEqual([whole(NODE)]);
      const t = pending('t1');
      core.onTasks([t]);
      expect(rec.take()).toEqual([
        'notify t1 AGENT_SCHEDULING, t1 AGENT_EXECUTING_PENDING',
        'forward t1',
      ]);
      expect(t.state).toBe('AGENT_EXECUTING_PENDING');
      expect(t.slots).toEqual([{ node: 'n0', cores: [0], gpus: [] }]);
      const base = {
        kind: 'task',
        uid: 't1',
        attempt: 1,
        ts: clock.now(),
        component: 'AgentScheduler',
      };
      expect(notes).toEqual([
        { ...base, state: 'AGENT_SCHEDULING' },
        { ...base, state: 'AGENT_EXECUTING_PENDING' },
      ]);
      expect(core.freeCapacity()).toEqual([{ ...whole(NODE), cores: 3 }]);
      expect(core.queued).toBe(0);
      expect(core.reservedFor).toBeUndefined();
      rec.expectNoMore();
    });

    it('gives a task as many distinct cores and whole GPUs as it asks, and its memory', () => {
      const s = setup();
      const a = pending('a', { coresPerRank: 2, gpusPerRank: 1, memPerRankMb: 1_000 });
      const b = pending('b', { coresPerRank: 2, gpusPerRank: 1 });
      started(s, a, b);
      expect(a.slots).toEqual([{ node: 'n0', cores: [0, 1], gpus: [0], memMb: 1_000 }]);
      expect(b.slots).toEqual([{ node: 'n0', cores: [2, 3], gpus: [1] }]);
      expect(s.core.freeCapacity()).toEqual([
        { node: 'n0', cores: 0, gpuFree: [0, 0], memMb: 7_192 },
      ]);
      s.rec.expectNoMore();
    });

    it('fits a task that asks exactly the whole node', () => {
      const s = setup();
      const t = pending('all', { coresPerRank: 4, gpusPerRank: 2, memPerRankMb: 8_192 });
      started(s, t);
      expect(t.slots).toEqual([{ node: 'n0', cores: [0, 1, 2, 3], gpus: [0, 1], memMb: 8_192 }]);
      s.rec.expectNoMore();
    });

    it('places tasks on several nodes: once a node is full the next task goes to another', () => {
      const s = setup([node('a', 2), node('b', 2)]);
      const ts = ['t1', 't2', 't3', 't4'].map((u) => pending(u));
      started(s, ...ts);
      expect(ts.map((t) => t.slots)).toEqual([
        [{ node: 'a', cores: [0], gpus: [] }],
        [{ node: 'a', cores: [1], gpus: [] }],
        [{ node: 'b', cores: [0], gpus: [] }],
        [{ node: 'b', cores: [1], gpus: [] }],
      ]);
      expect(freeCores(s)).toEqual({ a: 0, b: 0 });
      s.rec.expectNoMore();
    });

    it('places a single-rank task on one node only, waiting rather than spanning nodes', () => {
      const s = setup([node('a', 2), node('b', 2)]);
      const t = pending('t', { coresPerRank: 3 });
      s.core.onTasks([t]);
      // 4 cores are free in all, but no node has 3: it can never run
      expect(s.rec.take()).toEqual(['notify t AGENT_SCHEDULING, t FAILED']);
      expect(t.reason?.code).toBe('E_NEVER_FITS');
      s.rec.expectNoMore();
    });

    it('gives a multi-rank task one slot per rank, over several nodes when one cannot hold all', () => {
      const s = setup([node('a', 2), node('b', 4)]);
      const t = pending('mpi', { ranks: 3, coresPerRank: 2 });
      started(s, t);
      expect(t.slots).toEqual([
        { node: 'a', cores: [0, 1], gpus: [] },
        { node: 'b', cores: [0, 1], gpus: [] },
        { node: 'b', cores: [2, 3], gpus: [] },
      ]);
      s.core.onReleased([{ uid: 'mpi' }]);
      expect(freeCores(s)).toEqual({ a: 2, b: 4 });
      s.rec.expectNoMore();
    });

    it('puts a 1-core task on the node with the fewest free cores that holds it (best fit)', () => {
      const s = setup([node('a', 8), node('b', 4), node('c', 6)]);
      const first = pending('first');
      started(s, first);
      expect(nodesOf(first)).toEqual(['b']);
      const five = pending('five', { coresPerRank: 5 });
      started(s, five);
      expect(nodesOf(five)).toEqual(['c']); // 6 free beats 8 free
      const next = pending('next');
      started(s, next);
      expect(nodesOf(next)).toEqual(['c']); // c has 1 free core, b 3, a 8
      expect(freeCores(s)).toEqual({ a: 8, b: 3, c: 0 });
      s.rec.expectNoMore();
    });

    it('breaks a tie in free cores by the fewest free GPUs, keeping GPU nodes for GPU tasks', () => {
      const s = setup([node('gpu', 4, 2), node('cpu', 4, 0)]);
      const t = pending('t');
      started(s, t);
      expect(nodesOf(t)).toEqual(['cpu']);
      s.rec.expectNoMore();
    });

    it('packs shared GPUs: two 0.5 tasks share one GPU and a whole-GPU task gets the other', () => {
      const s = setup();
      const h1 = pending('h1', { gpusPerRank: 0.5 });
      const h2 = pending('h2', { gpusPerRank: 0.5 });
      const w = pending('w', { gpusPerRank: 1 });
      started(s, h1, h2, w);
      expect(h1.slots).toEqual([{ node: 'n0', cores: [0], gpus: [0], gpuShare: 0.5 }]);
      expect(h2.slots).toEqual([{ node: 'n0', cores: [1], gpus: [0], gpuShare: 0.5 }]);
      expect(w.slots).toEqual([{ node: 'n0', cores: [2], gpus: [1] }]);
      expect(s.core.freeCapacity()[0]?.gpuFree).toEqual([0, 0]);
      s.core.onTasks([pending('q', { gpusPerRank: 0.25 })]);
      expect(s.rec.take()).toEqual(['notify q AGENT_SCHEDULING']); // no share left anywhere
      s.core.onReleased([{ uid: 'h1' }]);
      expect(s.rec.take()).toEqual(['notify q AGENT_EXECUTING_PENDING', 'forward q']);
      expect(s.core.freeCapacity()[0]?.gpuFree).toEqual([250, 0]);
      s.rec.expectNoMore();
    });

    it('adds shares exactly in thousandths (0.3 + 0.7 fill one GPU) and gives them back exactly', () => {
      const s = setup();
      const a = pending('a', { gpusPerRank: 0.3 });
      const b = pending('b', { gpusPerRank: 0.7 });
      started(s, a, b);
      expect([a.slots?.[0]?.gpus, b.slots?.[0]?.gpus]).toEqual([[0], [0]]);
      expect(b.slots?.[0]?.gpuShare).toBe(0.7);
      expect(s.core.freeCapacity()[0]?.gpuFree).toEqual([0, GPU_UNIT]);
      s.core.onReleased([{ uid: 'a' }, { uid: 'b' }]);
      expect(s.core.freeCapacity()).toEqual([whole(NODE)]);
      s.rec.expectNoMore();
    });

    it('puts a share on the shared GPU with the least room that still holds it', () => {
      const s = setup();
      const x = pending('x', { gpusPerRank: 0.5 });
      const y = pending('y', { gpusPerRank: 0.7 }); // does not fit GPU 0's 0.5: takes GPU 1
      const z = pending('z', { gpusPerRank: 0.3 }); // GPU 1 (0.3 left) is tighter than GPU 0
      started(s, x, y, z);
      expect([x, y, z].map((t) => t.slots?.[0]?.gpus)).toEqual([[0], [1], [1]]);
      expect(s.core.freeCapacity()[0]?.gpuFree).toEqual([500, 0]);
      s.rec.expectNoMore();
    });

    it('honours gpuIndices, and a task asking busy GPUs waits even while other GPUs are free', () => {
      const s = setup();
      const first = pending('first', { gpuIndices: [1] });
      started(s, first);
      expect(first.slots).toEqual([{ node: 'n0', cores: [0], gpus: [1] }]);
      const same = pending('same', { gpuIndices: [1] });
      waiting(s, same);
      expect(s.core.freeCapacity()[0]?.gpuFree).toEqual([GPU_UNIT, 0]);
      s.core.onReleased([{ uid: 'first' }]);
      expect(s.rec.take()).toEqual(['notify same AGENT_EXECUTING_PENDING', 'forward same']);
      expect(same.slots).toEqual([{ node: 'n0', cores: [0], gpus: [1] }]);
      s.rec.expectNoMore();
    });

    it('does not give a gpuIndices task a GPU that is partly shared', () => {
      const s = setup();
      started(s, pending('share', { gpusPerRank: 0.1 })); // takes GPU 0
      const t = pending('t', { gpusPerRank: 2, gpuIndices: [0, 1] });
      waiting(s, t);
      s.core.onReleased([{ uid: 'share' }]);
      expect(s.rec.take()).toEqual(['notify t AGENT_EXECUTING_PENDING', 'forward t']);
      expect(t.slots).toEqual([{ node: 'n0', cores: [0], gpus: [0, 1] }]);
      s.rec.expectNoMore();
    });

    it('puts every task of a colocate tag on the node the first one got, while any of them runs', () => {
      const s = setup([node('a', 4), node('b', 4)]);
      const c1 = pending('c1', { coresPerRank: 2, tags: { colocate: 'C' } });
      started(s, c1);
      started(s, pending('plain', { coresPerRank: 2 })); // best fit: a is now full
      expect(nodesOf(c1)).toEqual(['a']);
      const c2 = pending('c2', { tags: { colocate: 'C' } });
      waiting(s, c2); // b has 4 free cores, but the group is on a
      expect(freeCores(s)).toEqual({ a: 0, b: 4 });
      s.core.onReleased([{ uid: 'plain' }]);
      expect(s.rec.take()).toEqual(['notify c2 AGENT_EXECUTING_PENDING', 'forward c2']);
      expect(nodesOf(c2)).toEqual(['a']);
      s.rec.expectNoMore();
    });

    it('lets a colocate group start afresh on another node once none of it runs', () => {
      const s = setup([node('a', 2), node('b', 4)]);
      started(s, pending('c1', { coresPerRank: 2, tags: { colocate: 'C' } }));
      const c2 = pending('c2', { coresPerRank: 3, tags: { colocate: 'C' } });
      waiting(s, c2); // a cannot hold it; b could, but the group is on a
      s.core.onReleased([{ uid: 'c1' }]);
      expect(s.rec.take()).toEqual(['notify c2 AGENT_EXECUTING_PENDING', 'forward c2']);
      expect(nodesOf(c2)).toEqual(['b']);
      s.rec.expectNoMore();
    });

    it('puts all ranks of a colocated multi-rank task on one node', () => {
      const s = setup([node('a', 2), node('b', 4)]);
      const t = pending('t', { ranks: 2, coresPerRank: 2, tags: { colocate: 'C' } });
      started(s, t);
      // best fit would put the first rank on a; a cannot hold both, so both go to b
      expect(t.slots).toEqual([
        { node: 'b', cores: [0, 1], gpus: [] },
        { node: 'b', cores: [2, 3], gpus: [] },
      ]);
      s.rec.expectNoMore();
    });

    it('runs no untagged task on a node running an exclusive-tag task; same-tag tasks share it', () => {
      const s = setup([node('a', 4), node('b', 4)]);
      const x1 = pending('x1', { tags: { exclusive: 'X' } });
      const plain = pending('plain');
      const x2 = pending('x2', { tags: { exclusive: 'X' } });
      started(s, x1, plain, x2);
      expect([x1, plain, x2].map(nodesOf)).toEqual([['a'], ['b'], ['a']]);
      // another tag needs a node of its own: none is empty
      const y = pending('y', { tags: { exclusive: 'Y' } });
      waiting(s, y);
      s.core.onReleased([{ uid: 'plain' }]);
      expect(s.rec.take()).toEqual(['notify y AGENT_EXECUTING_PENDING', 'forward y']);
      expect(nodesOf(y)).toEqual(['b']);
      s.rec.expectNoMore();
    });

    it('puts several ranks of an exclusive-tag task on one node when it holds them', () => {
      const s = setup([node('a', 4)]);
      const t = pending('t', { ranks: 2, tags: { exclusive: 'X' } });
      started(s, t);
      expect(t.slots).toEqual([
        { node: 'a', cores: [0], gpus: [] },
        { node: 'a', cores: [1], gpus: [] },
      ]);
      s.core.onTasks([pending('plain')]);
      expect(s.rec.take()).toEqual(['notify plain AGENT_SCHEDULING']);
      s.core.onReleased([{ uid: 't' }]);
      expect(s.rec.take()).toEqual(['notify plain AGENT_EXECUTING_PENDING', 'forward plain']);
      s.rec.expectNoMore();
    });

    it('keeps a task waiting while the node is full and starts it on the cores a release frees', () => {
      const s = setup();
      const first = ['a', 'b', 'c', 'd'].map((u) => pending(u));
      started(s, ...first);
      const e = pending('e');
      waiting(s, e);
      expect(e.state).toBe('AGENT_SCHEDULING');
      expect(e.slots).toBeUndefined();
      expect(s.core.queued).toBe(1);
      expect(freeCores(s)).toEqual({ n0: 0 });

      s.core.onReleased([{ uid: 'c' }]);
      expect(s.rec.take()).toEqual(['notify e AGENT_EXECUTING_PENDING', 'forward e']);
      expect(e.slots).toEqual([{ node: 'n0', cores: first[2]!.slots![0]!.cores, gpus: [] }]);
      expect(s.core.queued).toBe(0);
      s.rec.expectNoMore();
    });
  });

  describe('never fits', () => {
    const pilot = '1 node(s) with 4 cores, 2 GPUs, 8192 MiB';
    it.each<[string, Partial<TaskDescription>, string[]]>([
      ['more cores per rank than any node has', { coresPerRank: 5 }, ['1 rank(s) x 5 cores']],
      ['more GPUs per rank than a node has', { gpusPerRank: 3 }, ['3 GPUs']],
      ['a GPU index the node lacks', { gpuIndices: [2] }, ['GPUs [2]']],
      ['more memory per rank than a node has', { memPerRankMb: 9_000 }, ['9000 MiB']],
      ['more ranks than all nodes hold', { ranks: 3, gpusPerRank: 1 }, ['3 rank(s)', '1 GPUs']],
    ])(
      'fails a task that asks %s at once, stating what it asked and what the pilot has',
      (_what, desc, words) => {
        const { rec, notes, core } = setup();
        const t = pending('t1', desc);
        core.onTasks([t]);
        expect(rec.take()).toEqual(['notify t1 AGENT_SCHEDULING, t1 FAILED']);
        expect(t.state).toBe('FAILED');
        expect(t.slots).toBeUndefined();
        expect(t.reason?.code).toBe('E_NEVER_FITS');
        expect(t.reason?.component).toBe('AgentScheduler');
        for (const w of [...words, pilot, 'can never run']) expect(t.reason?.message).toContain(w);
        expect(t.reason?.detail).toMatchObject({
          asked: {
            ranks: desc.ranks ?? 1,
            cores: desc.coresPerRank ?? 1,
            gpus: desc.gpuIndices?.length ?? desc.gpusPerRank ?? 0,
            memMb: desc.memPerRankMb ?? 0,
          },
          pilot: [expect.objectContaining({ cores: 4, gpus: 2, memMb: 8_192, count: 1 })],
        });
        expect(notes.at(-1)?.detail).toEqual({ reason: t.reason });
        expect(core.queued).toBe(0);
        expect(core.freeCapacity()).toEqual([whole(NODE)]);
        rec.expectNoMore();
      },
    );

    it('fails a shared-GPU task at once on a pilot without GPUs', () => {
      const s = setup([node('a', 4)]);
      const t = pending('t', { gpusPerRank: 0.5 });
      s.core.onTasks([t]);
      expect(s.rec.take()).toEqual(['notify t AGENT_SCHEDULING, t FAILED']);
      expect(t.reason?.message).toContain('0.5 of a GPU');
      expect(t.reason?.message).toContain('1 node(s) with 4 cores, 0 GPUs, 8192 MiB');
      s.rec.expectNoMore();
    });

    it('fails a multi-rank task needing more nodes than the pilot has, naming every node size', () => {
      const s = setup([node('a', 4), node('b', 4), node('c', 2, 1)]);
      const t = pending('t', { ranks: 4, coresPerRank: 3 });
      s.core.onTasks([t]);
      expect(s.rec.take()).toEqual(['notify t AGENT_SCHEDULING, t FAILED']);
      expect(t.reason?.code).toBe('E_NEVER_FITS');
      expect(t.reason?.message).toBe(
        'task asks 4 rank(s) x 3 cores, 0 GPUs, 0 MiB per rank; the pilot has ' +
          '2 node(s) with 4 cores, 0 GPUs, 8192 MiB; 1 node(s) with 2 cores, 1 GPUs, 8192 MiB, ' +
          'so it can never run',
      );
      // one rank fewer fits: it starts on the two big nodes and the third rank-size node
      const ok = pending('ok', { ranks: 2, coresPerRank: 3 });
      started(s, ok);
      expect(nodesOf(ok)).toEqual(['a', 'b']);
      s.rec.expectNoMore();
    });

    it('fails a colocated multi-rank task too big for one node, though all nodes together hold it', () => {
      const s = setup([node('a', 4), node('b', 4)]);
      const t = pending('t', { ranks: 2, coresPerRank: 3, tags: { colocate: 'C' } });
      s.core.onTasks([t]);
      expect(s.rec.take()).toEqual(['notify t AGENT_SCHEDULING, t FAILED']);
      expect(t.reason?.message).toContain('2 rank(s) x 3 cores');
      expect(t.reason?.message).toContain('on one node (colocate)');
      expect(t.reason?.message).toContain('2 node(s) with 4 cores');
      s.rec.expectNoMore();
    });

    it.each<[string, Partial<TaskDescription>, string]>([
      ['a fractional GPU count above 1', { gpusPerRank: 1.5 }, 'gpusPerRank 1.5'],
      ['gpusPerRank that contradicts gpuIndices', { gpusPerRank: 1, gpuIndices: [0, 1] }, '[0, 1]'],
    ])('fails a task asking %s at once as a bad request', (_what, desc, word) => {
      const s = setup();
      const t = pending('t', desc);
      s.core.onTasks([t]);
      expect(s.rec.take()).toEqual(['notify t AGENT_SCHEDULING, t FAILED']);
      expect(t.reason?.code).toBe('E_BAD_REQUEST');
      expect(t.reason?.message).toContain(word);
      s.rec.expectNoMore();
    });

    it('fails a never-fitting task at once even while the node is full, and lets one that fits later wait', () => {
      const s = setup();
      started(s, pending('big', { coresPerRank: 4 }));
      s.core.onTasks([pending('huge', { coresPerRank: 8 }), pending('small')]);
      expect(s.rec.take()).toEqual([
        'notify huge AGENT_SCHEDULING, huge FAILED, small AGENT_SCHEDULING',
      ]);
      expect(s.core.queued).toBe(1);
      s.core.onReleased([{ uid: 'big' }]);
      expect(s.rec.take()).toEqual(['notify small AGENT_EXECUTING_PENDING', 'forward small']);
      s.rec.expectNoMore();
    });
  });

  describe('order, reservation and backfill', () => {
    it('lets at most backfillLimit later tasks start ahead of a head that does not fit, then reserves for it', () => {
      const s = setup([node('n0', 4)], 2);
      started(s, pending('r1'), pending('r2', { coresPerRank: 2 })); // 1 core left
      s.core.onTasks([
        pending('head', { coresPerRank: 2 }),
        pending('s1'),
        pending('s2'),
        pending('s3'),
      ]);
      // the head does not fit; s1 does, and passes it (1 of 2)
      expect(s.rec.take()).toEqual([
        'notify head AGENT_SCHEDULING, s1 AGENT_SCHEDULING, s2 AGENT_SCHEDULING, s3 AGENT_SCHEDULING, s1 AGENT_EXECUTING_PENDING',
        'forward s1',
      ]);
      s.core.onReleased([{ uid: 'r1' }]); // 1 core again: s2 passes it (2 of 2), then n0 is held
      expect(s.rec.take()).toEqual(['notify s2 AGENT_EXECUTING_PENDING', 'forward s2']);
      s.core.onReleased([{ uid: 's1' }]); // 1 free, held for the head: s3 may not take it
      s.rec.expectNoMore();
      s.core.onReleased([{ uid: 's2' }]); // 2 free: the head
      expect(s.rec.take()).toEqual(['notify head AGENT_EXECUTING_PENDING', 'forward head']);
      s.core.onReleased([{ uid: 'r2' }]);
      expect(s.rec.take()).toEqual(['notify s3 AGENT_EXECUTING_PENDING', 'forward s3']);
      s.rec.expectNoMore();
    });

    it('starts the head as soon as it fits, however many passed it, and counts anew for the next head', () => {
      const s = setup([node('n0', 4)], 8);
      started(s, pending('r1'), pending('r2', { coresPerRank: 2 }));
      s.core.onTasks([
        pending('h1', { coresPerRank: 2 }),
        pending('h2', { coresPerRank: 3 }),
        pending('s1'),
      ]);
      expect(s.rec.take()).toEqual([
        'notify h1 AGENT_SCHEDULING, h2 AGENT_SCHEDULING, s1 AGENT_SCHEDULING, s1 AGENT_EXECUTING_PENDING',
        'forward s1',
      ]);
      s.core.onReleased([{ uid: 'r2' }]); // 2 free: h1 first; h2 (3) waits, nothing passes it
      expect(s.rec.take()).toEqual(['notify h1 AGENT_EXECUTING_PENDING', 'forward h1']);
      s.core.onReleased([{ uid: 'r1' }, { uid: 's1' }]); // 2 free: h2 still does not fit
      s.rec.expectNoMore();
      s.core.onReleased([{ uid: 'h1' }]);
      expect(s.rec.take()).toEqual(['notify h2 AGENT_EXECUTING_PENDING', 'forward h2']);
      expect(s.core.queued).toBe(0);
    });

    it('defaults the limit to the cores of the largest node', () => {
      const h = new CoreHarness();
      const core = new AgentSchedulerCore(h.effects({}), h.clock, [node('a', 2), node('b', 3)]);
      const s = Object.assign(h, { core });
      started(s, pending('big', { coresPerRank: 3 }), pending('r', { coresPerRank: 2 })); // full
      s.core.onTasks([
        pending('head', { coresPerRank: 3 }),
        ...['p1', 'p2', 'p3', 'p4'].map((u) => pending(u)),
      ]);
      s.rec.take();
      s.core.onReleased([{ uid: 'r' }]); // a: 2 free; p1 and p2 pass the head
      expect(s.rec.take()).toEqual([
        'notify p1 AGENT_EXECUTING_PENDING, p2 AGENT_EXECUTING_PENDING',
        'forward p1, p2',
      ]);
      s.core.onReleased([{ uid: 'p1' }]); // p3 passes: 3 of 3, b is held for the head now
      expect(s.rec.take()).toEqual(['notify p3 AGENT_EXECUTING_PENDING', 'forward p3']);
      s.core.onReleased([{ uid: 'p2' }]); // p4 may go on a (not held)
      expect(s.rec.take()).toEqual(['notify p4 AGENT_EXECUTING_PENDING', 'forward p4']);
      s.core.onReleased([{ uid: 'big' }]);
      expect(s.rec.take()).toEqual(['notify head AGENT_EXECUTING_PENDING', 'forward head']);
    });

    it('serves waiting tasks by priority, higher first, FIFO within a priority', () => {
      const s = setup([node('n0', 1)]);
      started(s, pending('busy'));
      const queue = [
        pending('a0', { priority: 0 }),
        pending('b5', { priority: 5 }),
        pending('c5', { priority: 5 }),
        pending('dneg', { priority: -1 }),
        pending('e0'),
        pending('f9', { priority: 9 }),
      ];
      s.core.onTasks(queue);
      s.rec.take();
      const order: string[] = [];
      let last = 'busy';
      for (let i = 0; i < queue.length; i++) {
        s.core.onReleased([{ uid: last }]);
        const calls = s.rec.take();
        expect(calls).toHaveLength(2);
        last = calls[1]!.replace('forward ', '');
        order.push(last);
      }
      expect(order).toEqual(['f9', 'b5', 'c5', 'a0', 'e0', 'dneg']);
      expect(s.core.queued).toBe(0);
      s.rec.expectNoMore();
    });

    it('orders tasks of equal priority by submission (seq), across bulks, not by arrival', () => {
      const s = setup([node('n0', 1)]);
      started(s, submitted('busy', 0));
      // a later bulk was staged first; tasks asking different capacity are in one order too
      waiting(s, submitted('s7', 7), submitted('s8', 8, { memPerRankMb: 1 }));
      waiting(s, submitted('s2', 2, { memPerRankMb: 1 }), submitted('s3', 3));
      waiting(s, submitted('s1', 1), submitted('s9', 9));
      expect(startsInTurn(s, 'busy', 6)).toEqual(['s1', 's2', 's3', 's7', 's8', 's9']);
      expect(s.core.queued).toBe(0);
      s.rec.expectNoMore();
    });

    it('puts priority before submission: a later task of higher priority goes first', () => {
      const s = setup([node('n0', 1)]);
      started(s, submitted('busy', 0));
      waiting(s, submitted('early', 1), submitted('late-high', 5, { priority: 1 }));
      waiting(s, submitted('earlier', 0));
      expect(startsInTurn(s, 'busy', 3)).toEqual(['late-high', 'earlier', 'early']);
      s.rec.expectNoMore();
    });

    it('places a record without seq after the submissions seen before it, in arrival order', () => {
      const s = setup([node('n0', 1)]);
      started(s, submitted('busy', 0));
      waiting(s, submitted('s5', 5), pending('x'), pending('y'));
      waiting(s, submitted('s3', 3), submitted('s7', 7));
      expect(startsInTurn(s, 'busy', 5)).toEqual(['s3', 's5', 'x', 'y', 's7']);
      s.rec.expectNoMore();
    });

    it('a task submitted earlier that arrives late becomes the head and takes the reservation; backfill goes on', () => {
      const s = setup([node('a', 4), node('b', 4)]);
      started(s, submitted('w1', 0, { coresPerRank: 3 }), submitted('w2', 1, { coresPerRank: 2 }));
      waiting(s, submitted('big', 10, { coresPerRank: 4 }));
      expect(s.core.reservedFor).toBe('big');
      // staged late, submitted before big: it is the head now, and holds b (the most free)
      waiting(s, submitted('early', 5, { coresPerRank: 4 }));
      expect(s.core.reservedFor).toBe('early');
      // a later small task still backfills on the node not reserved
      const small = submitted('small', 20);
      started(s, small);
      expect(nodesOf(small)).toEqual(['a']);
      s.core.onReleased([{ uid: 'w2' }]);
      expect(s.rec.take()).toEqual(['notify early AGENT_EXECUTING_PENDING', 'forward early']);
      expect(nodesOf(s.forwarded.at(-1)!)).toEqual(['b']);
      expect(s.core.reservedFor).toBe('big');
      s.core.onReleased([{ uid: 'w1' }]);
      s.rec.expectNoMore(); // small still runs on a, which is held for big now
      s.core.onReleased([{ uid: 'small' }]);
      expect(s.rec.take()).toEqual(['notify big AGENT_EXECUTING_PENDING', 'forward big']);
      s.rec.expectNoMore();
    });

    it('starts all fitting tasks of a release in priority order in one bulk', () => {
      const s = setup();
      started(s, pending('busy', { coresPerRank: 4 }));
      s.core.onTasks([
        pending('low', { priority: 1 }),
        pending('high', { priority: 2 }),
        pending('mid'),
      ]);
      s.rec.take();
      s.core.onReleased([{ uid: 'busy' }]);
      expect(s.rec.take()).toEqual([
        'notify high AGENT_EXECUTING_PENDING, low AGENT_EXECUTING_PENDING, mid AGENT_EXECUTING_PENDING',
        'forward high, low, mid',
      ]);
      s.rec.expectNoMore();
    });

    it('keeps FIFO within a priority across tasks that ask different capacity', () => {
      const s = setup([node('n0', 2)]);
      // a0 and a1 ask the same; b asks a little memory too: it still comes before a1
      s.core.onTasks([pending('a0'), pending('b', { memPerRankMb: 1 }), pending('a1')]);
      expect(s.rec.take()).toEqual([
        'notify a0 AGENT_SCHEDULING, b AGENT_SCHEDULING, a1 AGENT_SCHEDULING, ' +
          'a0 AGENT_EXECUTING_PENDING, b AGENT_EXECUTING_PENDING',
        'forward a0, b',
      ]);
      expect(s.core.reservedFor).toBe('a1');
      s.rec.expectNoMore();
    });

    it('reserves nodes for the head that does not fit, and starts nothing else there', () => {
      const s = setup();
      started(s, pending('half', { coresPerRank: 2 }));
      const big = pending('big', { coresPerRank: 4 });
      // small tasks in the same bulk, behind big, would fit the two free cores
      s.core.onTasks([big, pending('s1'), pending('s2')]);
      expect(s.rec.take()).toEqual([
        'notify big AGENT_SCHEDULING, s1 AGENT_SCHEDULING, s2 AGENT_SCHEDULING',
      ]);
      expect(s.core.reservedFor).toBe('big');
      expect(freeCores(s)).toEqual({ n0: 2 });
      s.core.onReleased([{ uid: 'half' }]);
      expect(s.rec.take()).toEqual(['notify big AGENT_EXECUTING_PENDING', 'forward big']);
      expect(big.slots?.[0]?.cores.slice().sort()).toEqual([0, 1, 2, 3]);
      expect(s.core.reservedFor).toBe('s1');
      s.core.onReleased([{ uid: 'big' }]);
      expect(s.rec.take()).toEqual([
        'notify s1 AGENT_EXECUTING_PENDING, s2 AGENT_EXECUTING_PENDING',
        'forward s1, s2',
      ]);
      expect(s.core.reservedFor).toBeUndefined();
      s.rec.expectNoMore();
    });

    it('backfill: a small task may start ahead of a blocked large one, only on nodes not reserved for it', () => {
      const s = setup([node('a', 4), node('b', 4)]);
      started(s, pending('w1', { coresPerRank: 3 }), pending('w2', { coresPerRank: 3 }));
      expect(freeCores(s)).toEqual({ a: 1, b: 1 });
      const big = pending('big', { coresPerRank: 4, priority: 1 });
      const s1 = pending('s1');
      const s2 = pending('s2');
      s.core.onTasks([big, s1, s2]);
      // big is reserved one node (a); s1 starts on the other; s2 finds no unreserved room
      expect(s.rec.take()).toEqual([
        'notify big AGENT_SCHEDULING, s1 AGENT_SCHEDULING, s2 AGENT_SCHEDULING, s1 AGENT_EXECUTING_PENDING',
        'forward s1',
      ]);
      expect(s.core.reservedFor).toBe('big');
      expect(nodesOf(s1)).toEqual(['b']);
      expect(freeCores(s)).toEqual({ a: 1, b: 0 });
      // the large one starts once its reserved node drains
      s.core.onReleased([{ uid: 'w1' }]);
      expect(s.rec.take()).toEqual(['notify big AGENT_EXECUTING_PENDING', 'forward big']);
      expect(nodesOf(big)).toEqual(['a']);
      s.core.onReleased([{ uid: 's1' }]);
      expect(s.rec.take()).toEqual(['notify s2 AGENT_EXECUTING_PENDING', 'forward s2']);
      expect(nodesOf(s2)).toEqual(['b']);
      s.rec.expectNoMore();
    });

    it('backfill: the head starts once its reserved nodes drain, however busy backfill keeps the others', () => {
      const s = setup([node('a', 4), node('b', 4)]);
      started(s, pending('w1', { coresPerRank: 3 }), pending('w2', { coresPerRank: 2 }));
      const big = pending('big', { coresPerRank: 4 });
      waiting(s, big);
      expect(s.core.reservedFor).toBe('big');
      // b (2 free) is reserved; backfill runs on a's free core only, one task at a time
      let prev = pending('s0');
      started(s, prev);
      for (let i = 1; i <= 5; i++) {
        const next = pending(`s${i}`);
        waiting(s, next); // b has 2 free cores, but it is reserved for big
        s.core.onReleased([{ uid: prev.uid }]);
        expect(s.rec.take()).toEqual([
          `notify ${next.uid} AGENT_EXECUTING_PENDING`,
          `forward ${next.uid}`,
        ]);
        expect(nodesOf(next)).toEqual(['a']);
        prev = next;
      }
      s.core.onReleased([{ uid: 'w2' }]);
      expect(s.rec.take()).toEqual(['notify big AGENT_EXECUTING_PENDING', 'forward big']);
      expect(nodesOf(big)).toEqual(['b']);
      s.rec.expectNoMore();
    });

    it('backfill: a multi-rank head is reserved enough nodes for all its ranks', () => {
      const s = setup([node('a', 4), node('b', 4), node('c', 4)]);
      const ws = ['wa', 'wb', 'wc'].map((u, i) => pending(u, { coresPerRank: [3, 2, 3][i]! }));
      started(s, ...ws);
      expect(ws.map(nodesOf)).toEqual([['a'], ['b'], ['c']]);
      const mpi = pending('mpi', { ranks: 2, coresPerRank: 4 });
      waiting(s, mpi);
      // the two nodes with the most free cores are held (b: 2, then a: 1); c's free core is not
      const s1 = pending('s1');
      const s2 = pending('s2');
      s.core.onTasks([s1, s2]);
      expect(s.rec.take()).toEqual([
        'notify s1 AGENT_SCHEDULING, s2 AGENT_SCHEDULING, s1 AGENT_EXECUTING_PENDING',
        'forward s1',
      ]);
      expect(nodesOf(s1)).toEqual(['c']);
      s.core.onReleased([{ uid: 'wb' }]);
      s.rec.expectNoMore(); // a still busy
      s.core.onReleased([{ uid: 'wa' }]);
      expect(s.rec.take()).toEqual(['notify mpi AGENT_EXECUTING_PENDING', 'forward mpi']);
      expect(nodesOf(mpi).sort()).toEqual(['a', 'b']);
      s.rec.expectNoMore();
    });

    it('a new higher-priority head moves the reservation to itself', () => {
      const s = setup([node('a', 4), node('b', 4)]);
      started(s, pending('w1', { coresPerRank: 3 }), pending('w2', { coresPerRank: 2 }));
      const big1 = pending('big1', { coresPerRank: 4 });
      waiting(s, big1);
      expect(s.core.reservedFor).toBe('big1');
      const big2 = pending('big2', { coresPerRank: 4, priority: 5 });
      waiting(s, big2);
      expect(s.core.reservedFor).toBe('big2');
      s.core.onReleased([{ uid: 'w2' }]);
      expect(s.rec.take()).toEqual(['notify big2 AGENT_EXECUTING_PENDING', 'forward big2']);
      expect(nodesOf(big2)).toEqual(['b']);
      expect(s.core.reservedFor).toBe('big1');
      s.core.onReleased([{ uid: 'w1' }]);
      expect(s.rec.take()).toEqual(['notify big1 AGENT_EXECUTING_PENDING', 'forward big1']);
      expect(nodesOf(big1)).toEqual(['a']);
      s.rec.expectNoMore();
    });

    it('a task of equal priority arriving later does not take the head’s place', () => {
      const s = setup([node('a', 4)]);
      started(s, pending('w', { coresPerRank: 2 }));
      waiting(s, pending('big', { coresPerRank: 4 }));
      waiting(s, pending('big2', { coresPerRank: 3 }));
      expect(s.core.reservedFor).toBe('big');
      s.core.onReleased([{ uid: 'w' }]);
      expect(s.rec.take()).toEqual(['notify big AGENT_EXECUTING_PENDING', 'forward big']);
      expect(s.core.reservedFor).toBe('big2');
      s.rec.expectNoMore();
    });

    it('reserves a node an exclusive tag owns too, so a stream of its tasks cannot starve the head', () => {
      const s = setup([node('a', 4), node('b', 4)]);
      const x0 = pending('x0', { tags: { exclusive: 'X' } });
      started(s, x0);
      expect(nodesOf(x0)).toEqual(['a']);
      const head = pending('head', { ranks: 2, coresPerRank: 4 });
      waiting(s, head);
      // a still has 3 cores for X, but it is held for the head now
      waiting(s, pending('x1', { tags: { exclusive: 'X' } }));
      s.core.onReleased([{ uid: 'x0' }]);
      expect(s.rec.take()).toEqual(['notify head AGENT_EXECUTING_PENDING', 'forward head']);
      expect(nodesOf(head).sort()).toEqual(['a', 'b']);
      expect(s.core.queued).toBe(1);
      s.rec.expectNoMore();
    });

    it('reserves anew when the colocate group a waiting head is bound to ends', () => {
      const s = setup([node('a', 2), node('b', 4)]);
      started(s, pending('c1', { coresPerRank: 2, tags: { colocate: 'C' } }));
      started(s, pending('s0'), pending('s1')); // a is full: both go to b
      const head = pending('head', { coresPerRank: 4, tags: { colocate: 'C' } });
      waiting(s, head); // bound to a while c1 runs there
      s.core.onReleased([{ uid: 'c1' }]);
      s.rec.expectNoMore(); // b has 2 cores free only
      expect(s.core.reservedFor).toBe('head');
      // a, too small for the head, is no longer held for it: backfill may use it, not b
      const s2 = pending('s2');
      started(s, s2);
      expect(nodesOf(s2)).toEqual(['a']);
      s.core.onReleased([{ uid: 's0' }, { uid: 's1' }]);
      expect(s.rec.take()).toEqual(['notify head AGENT_EXECUTING_PENDING', 'forward head']);
      expect(nodesOf(head)).toEqual(['b']);
      s.rec.expectNoMore();
    });
  });

  describe('cancel', () => {
    it('cancels a waiting task at once and never starts it', () => {
      const s = setup([node('n0', 1)]);
      started(s, pending('busy'));
      const w = pending('w');
      s.core.onTasks([w, pending('x')]);
      s.rec.take();
      s.core.onCancel(['w']);
      expect(s.rec.take()).toEqual(['notify w CANCELED']);
      expect(w.state).toBe('CANCELED');
      expect(s.notes.at(-1)?.detail).toEqual({ reason: canceledByUser('AgentScheduler') });
      expect(s.core.queued).toBe(1);
      s.core.onReleased([{ uid: 'busy' }]);
      expect(s.rec.take()).toEqual(['notify x AGENT_EXECUTING_PENDING', 'forward x']);
      s.rec.expectNoMore();
    });

    it('cancels the head: its reservation is released and others start on those nodes', () => {
      const s = setup([node('a', 4), node('b', 4)]);
      started(s, pending('w1', { coresPerRank: 3 }), pending('w2', { coresPerRank: 2 }));
      waiting(s, pending('big', { coresPerRank: 4 }));
      started(s, pending('s1')); // a's free core; b is reserved
      waiting(s, pending('s2'), pending('s3'));
      expect(freeCores(s)).toEqual({ a: 0, b: 2 });
      s.core.onCancel(['big']);
      expect(s.rec.take()).toEqual([
        'notify big CANCELED, s2 AGENT_EXECUTING_PENDING, s3 AGENT_EXECUTING_PENDING',
        'forward s2, s3',
      ]);
      expect(s.core.reservedFor).toBeUndefined();
      expect(s.core.queued).toBe(0);
      s.rec.expectNoMore();
    });

    it('cancels a task on receipt when its cancel came first, without allocating', () => {
      const s = setup();
      s.core.onCancel(['late']);
      s.rec.expectNoMore();
      const t = pending('late');
      s.core.onTasks([t, pending('other')]);
      expect(s.rec.take()).toEqual([
        'notify late CANCELED, other AGENT_SCHEDULING, other AGENT_EXECUTING_PENDING',
        'forward other',
      ]);
      expect(t.state).toBe('CANCELED');
      expect(t.slots).toBeUndefined();
      expect(freeCores(s)).toEqual({ n0: 3 });
      s.rec.expectNoMore();
    });

    it('does nothing on a cancel for a task it has already handed on', () => {
      const s = setup();
      const t = pending('t1');
      started(s, t);
      s.core.onCancel(['t1']);
      expect(t.state).toBe('AGENT_EXECUTING_PENDING');
      expect(freeCores(s)).toEqual({ n0: 3 });
      s.rec.expectNoMore();
    });
  });

  describe('release', () => {
    it('frees a task’s slots exactly once, whatever repeats', () => {
      const s = setup();
      started(
        s,
        pending('a', { coresPerRank: 2, gpusPerRank: 1, memPerRankMb: 100 }),
        pending('b', { gpusPerRank: 0.5 }),
      );
      const at = (cores: number, gpuFree: number[], memMb: number) => [
        { node: 'n0', cores, gpuFree, memMb },
      ];
      expect(s.core.freeCapacity()).toEqual(at(1, [0, 500], 8_092));
      s.core.onReleased([{ uid: 'a' }, { uid: 'a' }]);
      expect(s.core.freeCapacity()).toEqual(at(3, [GPU_UNIT, 500], 8_192));
      s.core.onReleased([{ uid: 'a' }]);
      s.core.onReleased([{ uid: 'nobody' }]);
      expect(s.core.freeCapacity()).toEqual(at(3, [GPU_UNIT, 500], 8_192));
      s.core.onReleased([{ uid: 'b' }]);
      expect(s.core.freeCapacity()).toEqual([whole(NODE)]);
      s.core.onReleased([{ uid: 'b' }]);
      expect(s.core.freeCapacity()).toEqual([whole(NODE)]);
      s.rec.expectNoMore();
    });

    it('does not let a second release of a uid start a task on cores that are not free', () => {
      const s = setup([node('n0', 1)]);
      started(s, pending('a'));
      waiting(s, pending('b'));
      s.core.onReleased([{ uid: 'a' }]);
      expect(s.rec.take()).toEqual(['notify b AGENT_EXECUTING_PENDING', 'forward b']);
      waiting(s, pending('c'));
      s.core.onReleased([{ uid: 'a' }]); // stale repeat: b still holds the only core
      expect(freeCores(s)).toEqual({ n0: 0 });
      expect(s.core.queued).toBe(1);
      s.rec.expectNoMore();
    });
  });

  describe('shutdown', () => {
    it.each(['FAILED', 'CANCELED'] as const)(
      'ends every waiting task %s on shutdown, in one notify, and drops the reservation',
      (final) => {
        const s = setup([node('n0', 1)]);
        const running = pending('running');
        started(s, running);
        const a = pending('a');
        const b = pending('b', { priority: 3 });
        s.core.onTasks([a, b]);
        s.rec.take();
        expect(s.core.reservedFor).toBe('b');
        s.core.onShutdown(final, AGENT_SHUTDOWN);
        expect(s.rec.take()).toEqual([`notify a ${final}, b ${final}`]);
        expect(a.state).toBe(final);
        expect(a.reason).toEqual(AGENT_SHUTDOWN);
        expect(s.notes.at(-1)?.detail).toEqual({ reason: AGENT_SHUTDOWN });
        expect(running.state).toBe('AGENT_EXECUTING_PENDING');
        expect(s.core.queued).toBe(0);
        expect(s.core.reservedFor).toBeUndefined();
        s.core.onReleased([{ uid: 'running' }]);
        expect(freeCores(s)).toEqual({ n0: 1 });
        s.core.onShutdown(final, AGENT_SHUTDOWN);
        s.rec.expectNoMore();
      },
    );
  });

  it('makes one notify and one forward call per handler call, however big the bulk', () => {
    const s = setup([node('n0', 6), node('n1', 4)]);
    const tasks = Array.from({ length: 50 }, (_, i) => pending(`t${i}`));
    tasks.push(pending('never', { coresPerRank: 11 }));
    s.core.onTasks(tasks);
    const calls = s.rec.take();
    expect(calls.map((c) => c.split(' ')[0])).toEqual(['notify', 'forward']);
    expect(s.notes).toHaveLength(51 + 1 + 10);
    expect(s.forwarded).toHaveLength(10);
    s.core.onReleased(s.forwarded.map((t) => ({ uid: t.uid })));
    expect(s.rec.take().map((c) => c.split(' ')[0])).toEqual(['notify', 'forward']);
    expect(s.forwarded).toHaveLength(20);
    s.core.onCancel(tasks.slice(20, 50).map((t) => t.uid));
    expect(s.rec.take().map((c) => c.split(' ')[0])).toEqual(['notify']);
    s.core.onReleased(s.forwarded.slice(10).map((t) => ({ uid: t.uid })));
    expect(s.rec.take()).toEqual([]);
    s.rec.expectNoMore();
  });

  describe('hand-over', () => {
    handOverTests({
      from: 'AGENT_SCHEDULING_PENDING',
      setup,
      pending,
      walk: ['AGENT_SCHEDULING', 'AGENT_EXECUTING_PENDING'],
    });

    it('rejects a bulk holding a task in another state without touching any of it', () => {
      const s = setup();
      const ok = pending('ok');
      const wrong = taskRecord('wrong', 'AGENT_EXECUTING_PENDING');
      let err: unknown;
      try {
        s.core.onTasks([ok, wrong]);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(IllegalTransitionError);
      expect(err).toMatchObject({ from: 'AGENT_EXECUTING_PENDING', component: 'AgentScheduler' });
      expect(ok.state).toBe('AGENT_SCHEDULING_PENDING');
      expect(ok.slots).toBeUndefined();
      expect(s.core.freeCapacity()).toEqual([whole(NODE)]);
      expect(s.core.queued).toBe(0);
      s.rec.expectNoMore();
    });
  });

  describe('properties over random pilots, task mixes and interleavings', () => {
    runProperties();
  });
});

// ---------------------------------------------------------------------------------------------
// Property tests: a model follows the recorded effects; a brute-force oracle judges each state.
// ---------------------------------------------------------------------------------------------

/** What one task asks, read from its description independently of the core. */
interface Ask {
  uid: string;
  ranks: number;
  cores: number;
  /** Whole GPUs per rank (without indices). */
  gpus: number;
  /** Thousandths of one GPU per rank. */
  share: number;
  indices: readonly number[] | undefined;
  mem: number;
  colocate: string | undefined;
  exclusive: string | undefined;
  priority: number;
  /** The submission number the order uses: `seq`, else the highest seen when it arrived. */
  submitted: number;
  arrival: number;
}

/** A node's free capacity and owner, derived from the slots of running tasks. */
interface Free {
  cores: number;
  mem: number;
  gpu: number[];
  slots: number;
  owner: string | undefined;
}

/** The head's reservation: its nodes, and the colocate tag of the head. */
interface Reservation {
  uid: string;
  nodes: Set<string>;
  colocate: string | undefined;
}

/**
 * The reservation as the core's Placement holds it (white box: the public API shows only
 * `reservedFor`).
 */
function peekReservation(
  core: AgentSchedulerCore,
  asks: Map<string, Ask>,
): Reservation | undefined {
  type Held = { uid: string; nodes: { name: string }[] };
  const r = (core as unknown as { placement: { reservation?: Held } }).placement.reservation;
  if (r === undefined) return undefined;
  const nodes = new Set(r.nodes.map((n) => n.name));
  return { uid: r.uid, nodes, colocate: asks.get(r.uid)?.colocate };
}

function check(ok: boolean, what: () => string): void {
  if (!ok) throw new Error(what());
}

/** How many ranks of `a` the free capacity `f` of one node holds. */
function rankCount(a: Ask, f: Free): number {
  let k = Math.floor(f.cores / a.cores);
  if (a.mem > 0) k = Math.min(k, Math.floor(f.mem / a.mem));
  if (a.indices !== undefined) {
    return a.indices.every((i) => f.gpu[i] === GPU_UNIT) ? Math.min(k, 1) : 0;
  }
  if (a.gpus > 0) {
    const wholeGpus = f.gpu.filter((g) => g === GPU_UNIT).length;
    return Math.min(k, Math.floor(wholeGpus / a.gpus));
  }
  if (a.share > 0) {
    // each rank takes its share on one GPU: count the shares each GPU holds
    return Math.min(
      k,
      f.gpu.reduce((n, g) => n + Math.floor(g / a.share), 0),
    );
  }
  return k;
}

interface View {
  free: Map<string, Free>;
  /** Colocate tag -> the node its running tasks are on. */
  bound: Map<string, string>;
}

function emptyView(pilot: readonly NodeResources[]): View {
  const free = new Map<string, Free>();
  for (const n of pilot) {
    const gpu = Array.from({ length: n.gpus }, () => GPU_UNIT);
    free.set(n.name, { cores: n.cores, mem: n.memMb, gpu, slots: 0, owner: undefined });
  }
  return { free, bound: new Map() };
}

/** Whether `a` fits the view now: a brute-force check over every node. */
function fits(a: Ask, v: View, reservation: Reservation | undefined): boolean {
  const may = (name: string): boolean => {
    if (reservation !== undefined && reservation.uid !== a.uid && reservation.nodes.has(name)) {
      return false;
    }
    const f = v.free.get(name)!;
    if (a.exclusive !== undefined) {
      return f.owner === a.exclusive || (f.owner === undefined && f.slots === 0);
    }
    return f.owner === undefined;
  };
  if (a.colocate !== undefined) {
    const b = v.bound.get(a.colocate);
    // the head, waiting to open this group, opens it first
    if (b === undefined && reservation !== undefined && reservation.uid !== a.uid) {
      if (reservation.colocate === a.colocate) return false;
    }
    const on = b === undefined ? [...v.free.keys()] : [b];
    return on.some((n) => may(n) && rankCount(a, v.free.get(n)!) >= a.ranks);
  }
  let ranks = 0;
  for (const [name, f] of v.free) if (may(name)) ranks += rankCount(a, f);
  return ranks >= a.ranks;
}

/** Whether `a` fits no empty pilot of these nodes. */
function neverFits(a: Ask, pilot: readonly NodeResources[]): boolean {
  return !fits(a, emptyView(pilot), undefined);
}

/** Whether `a` comes before `b` in the scheduling order. */
const before = (a: Ask, b: Ask): boolean =>
  a.priority > b.priority ||
  (a.priority === b.priority &&
    (a.submitted < b.submitted || (a.submitted === b.submitted && a.arrival < b.arrival)));

type Call =
  | { kind: 'tasks'; uids: Set<string> }
  | { kind: 'released' }
  | { kind: 'cancel'; uids: Set<string> };

/** Follows the core through its recorded effects and checks every rule after each handler call. */
class Model {
  readonly asks = new Map<string, Ask>();
  readonly records = new Map<string, TaskRecord>();
  readonly waiting = new Set<string>();
  readonly running = new Map<string, Slot[]>();
  readonly released: string[] = [];
  readonly canceled = new Set<string>();
  private arrivals = 0;
  private lastSeq = -1;

  constructor(
    readonly s: Setup,
    readonly pilot: readonly NodeResources[],
  ) {}

  submit(tasks: TaskRecord[]): void {
    for (const t of tasks) {
      const d = t.description;
      const g = d.gpusPerRank ?? d.gpuIndices?.length ?? 0;
      if (t.seq !== undefined) this.lastSeq = Math.max(this.lastSeq, t.seq);
      this.records.set(t.uid, t);
      this.asks.set(t.uid, {
        uid: t.uid,
        ranks: d.ranks ?? 1,
        cores: d.coresPerRank ?? 1,
        gpus: d.gpuIndices === undefined && g >= 1 ? g : 0,
        share: g > 0 && g < 1 ? Math.round(g * GPU_UNIT) : 0,
        indices: d.gpuIndices,
        mem: d.memPerRankMb ?? 0,
        colocate: d.tags?.colocate,
        exclusive: d.tags?.exclusive,
        priority: d.priority ?? 0,
        submitted: t.seq ?? this.lastSeq,
        arrival: this.arrivals++,
      });
    }
    this.s.core.onTasks(tasks);
    this.follow({ kind: 'tasks', uids: new Set(tasks.map((t) => t.uid)) });
    for (const t of tasks) {
      if (this.canceled.has(t.uid)) continue;
      const never = neverFits(this.asks.get(t.uid)!, this.pilot);
      check(never === (t.state === 'FAILED'), () => `${t.uid} ${t.state}, never fits: ${never}`);
    }
  }

  release(uid: string): void {
    const slots = this.running.get(uid);
    if (slots !== undefined) {
      this.running.delete(uid);
      this.released.push(uid);
    }
    this.s.core.onReleased([{ uid }]);
    this.follow({ kind: 'released' });
  }

  cancel(uid: string): void {
    this.canceled.add(uid);
    this.s.core.onCancel([uid]);
    this.follow({ kind: 'cancel', uids: new Set([uid]) });
  }

  /** Reads one handler call's effects into the model, then checks the rules. */
  private follow(call: Call): void {
    const { s } = this;
    const kinds = s.rec.take().map((c) => c.split(' ')[0]);
    check(['', 'notify', 'notify,forward'].includes(kinds.join(',')), () => kinds.join(','));
    const started: string[] = [];
    for (const n of s.notes) {
      const t = this.records.get(n.uid);
      check(t !== undefined, () => `notification for unknown ${n.uid}`);
      // any other state is a bug the default case reports, not a case to list
      const state: string = n.state;
      switch (state) {
        case 'AGENT_SCHEDULING':
          check(call.kind === 'tasks' && call.uids.has(n.uid), () => `${n.uid} arrives late`);
          this.waiting.add(n.uid);
          break;
        case 'CANCELED':
          check(this.canceled.has(n.uid), () => `${n.uid} CANCELED without a cancel`);
          check(
            call.kind !== 'released' && call.uids.has(n.uid) && !this.running.has(n.uid),
            () => `${n.uid} CANCELED out of turn`,
          );
          this.waiting.delete(n.uid);
          break;
        case 'FAILED':
          check(call.kind === 'tasks' && this.waiting.delete(n.uid), () => `${n.uid} FAILED late`);
          check(t!.reason?.code === 'E_NEVER_FITS', () => `${n.uid} reason ${t!.reason?.code}`);
          check(t!.reason!.message.endsWith('so it can never run'), () => t!.reason!.message);
          break;
        case 'AGENT_EXECUTING_PENDING':
          check(this.waiting.delete(n.uid), () => `${n.uid} started without waiting`);
          this.running.set(n.uid, t!.slots ?? []);
          started.push(n.uid);
          break;
        default:
          throw new Error(`unexpected notification ${n.uid} ${n.state}`);
      }
    }
    const fwd = s.forwarded.map((t) => t.uid).join(',');
    check(fwd === started.join(','), () => `forwarded ${fwd}, started ${started.join(',')}`);
    s.notes.length = 0;
    s.forwarded.length = 0;
    this.checkState(started);
  }

  /** Builds the free capacity the given running tasks leave, checking it is never overdrawn. */
  view(except?: string): View {
    const v = emptyView(this.pilot);
    const used = new Map(this.pilot.map((n) => [n.name, new Set<number>()]));
    const tags = new Map(this.pilot.map((n) => [n.name, new Set<string | undefined>()]));
    for (const [uid, slots] of this.running) {
      if (uid === except) continue;
      const a = this.asks.get(uid)!;
      for (const sl of slots) {
        const f = v.free.get(sl.node);
        check(f !== undefined, () => `${uid} on unknown node ${sl.node}`);
        const spec = this.pilot.find((n) => n.name === sl.node)!;
        for (const c of sl.cores) {
          check(Number.isInteger(c) && c >= 0 && c < spec.cores, () => `${uid} core ${c}`);
          check(!used.get(sl.node)!.has(c), () => `core ${sl.node}/${c} given twice (${uid})`);
          used.get(sl.node)!.add(c);
        }
        f!.cores -= sl.cores.length;
        for (const g of sl.gpus) {
          check(Number.isInteger(g) && g >= 0 && g < spec.gpus, () => `${uid} GPU ${g}`);
          f!.gpu[g]! -= sl.gpuShare === undefined ? GPU_UNIT : Math.round(sl.gpuShare * GPU_UNIT);
          check(f!.gpu[g]! >= 0, () => `GPU ${sl.node}/${g} overdrawn (${uid})`);
        }
        f!.mem -= sl.memMb ?? 0;
        check(f!.mem >= 0, () => `memory of ${sl.node} overdrawn (${uid})`);
        f!.slots++;
        tags.get(sl.node)!.add(a.exclusive);
        if (a.exclusive !== undefined) f!.owner = a.exclusive;
        if (a.colocate !== undefined) {
          const b = v.bound.get(a.colocate) ?? sl.node;
          check(b === sl.node, () => `colocate ${a.colocate} on ${b} and ${sl.node}`);
          v.bound.set(a.colocate, b);
        }
      }
    }
    for (const [name, ts] of tags) {
      const owners = [...ts];
      check(
        owners.every((o) => o === undefined) || owners.length === 1,
        () => `node ${name} runs tags ${owners.map(String).join(', ')}`,
      );
    }
    return v;
  }

  private checkSlots(uid: string, slots: Slot[]): void {
    const a = this.asks.get(uid)!;
    check(slots.length === a.ranks, () => `${uid}: ${slots.length} slots for ${a.ranks} ranks`);
    for (const sl of slots) {
      check(sl.cores.length === a.cores, () => `${uid}: ${sl.cores.length} cores`);
      check((sl.memMb ?? 0) === a.mem, () => `${uid}: memMb ${sl.memMb}`);
      const gpus = sl.gpus.join(',');
      if (a.indices !== undefined) {
        check(gpus === a.indices.join(','), () => `${uid}: GPUs ${gpus}`);
        check(sl.gpuShare === undefined, () => `${uid}: gpuShare on indices`);
      } else if (a.share > 0) {
        check(sl.gpus.length === 1, () => `${uid}: shared slot on GPUs ${gpus}`);
        const share = Math.round((sl.gpuShare ?? 1) * GPU_UNIT);
        check(share === a.share, () => `${uid}: gpuShare ${sl.gpuShare}`);
      } else {
        check(sl.gpus.length === a.gpus, () => `${uid}: GPUs ${gpus}`);
        check(new Set(sl.gpus).size === a.gpus, () => `${uid}: GPUs ${gpus} repeat`);
        check(sl.gpuShare === undefined, () => `${uid}: gpuShare on whole GPUs`);
      }
    }
    if (a.colocate !== undefined || a.ranks === 1) {
      check(new Set(slots.map((x) => x.node)).size === 1, () => `${uid} spans nodes`);
    }
  }

  private checkState(started: string[]): void {
    const { core } = this.s;
    for (const [uid, slots] of this.running) this.checkSlots(uid, slots);
    const v = this.view();
    // freeCapacity() is exactly size minus what running tasks hold
    for (const f of core.freeCapacity()) {
      const m = v.free.get(f.node)!;
      const want = JSON.stringify({ cores: m.cores, gpu: m.gpu, mem: m.mem });
      const got = JSON.stringify({ cores: f.cores, gpu: f.gpuFree, mem: f.memMb });
      check(want === got, () => `free on ${f.node}: core says ${got}, slots say ${want}`);
    }
    check(core.queued === this.waiting.size, () => `queued ${core.queued}/${this.waiting.size}`);

    // the head (priority, then arrival) holds the reservation, and it can hold the head
    const res = peekReservation(core, this.asks);
    check(res?.uid === core.reservedFor, () => 'reservedFor disagrees with the reservation');
    const order = [...this.waiting]
      .map((u) => this.asks.get(u)!)
      .sort((x, y) => (before(x, y) ? -1 : 1));
    const head = order[0];
    if (head === undefined) {
      check(res === undefined, () => `reservation for ${res?.uid} while nothing waits`);
    } else if (res === undefined) {
      // only a head bound to a colocate node it may not use now (another exclusive tag) has none
      const b = head.colocate === undefined ? undefined : v.bound.get(head.colocate);
      const owner = b === undefined ? undefined : v.free.get(b)!.owner;
      check(b !== undefined && owner !== head.exclusive, () => `no reservation for ${head.uid}`);
    } else {
      check(res.uid === head.uid, () => `reservation for ${res.uid}, head is ${head.uid}`);
      const bound = head.colocate === undefined ? undefined : v.bound.get(head.colocate);
      if (bound !== undefined) {
        check(res.nodes.size === 1 && res.nodes.has(bound), () => `${head.uid} bound to ${bound}`);
      } else {
        const sizes = this.pilot.filter((n) => res.nodes.has(n.name));
        check(
          !neverFits(head, sizes),
          () => `nodes ${[...res.nodes].join(',')} cannot hold ${head.uid}`,
        );
      }
    }

    // nothing waits that fits the capacity it may use now
    for (const a of order) {
      check(!fits(a, v, res), () => `${a.uid} waits though it fits`);
    }

    for (const uid of started) {
      const l = this.asks.get(uid)!;
      // no task starts on the head's reserved nodes ahead of it
      if (res !== undefined && head !== undefined && before(head, l)) {
        const on = this.running.get(uid)!.map((x) => x.node);
        check(
          !on.some((n) => res.nodes.has(n)),
          () => `${uid} overtook ${head.uid} on ${on.join(',')}`,
        );
      }
      // no task starts while one before it in the order waits that would fit in its place
      const without = this.view(uid);
      for (const h of order) {
        if (!before(h, l)) break;
        check(!fits(h, without, res), () => `${uid} started though ${h.uid} fits its place`);
      }
    }
  }
}

function runProperties(): void {
  const nodeArb = fc.record({
    cores: fc.integer({ min: 1, max: 16 }),
    gpus: fc.integer({ min: 0, max: 4 }),
    memMb: fc.integer({ min: 1, max: 16 }).map((k) => k * 1_024),
  });
  const pilotArb = fc
    .array(nodeArb, { minLength: 1, maxLength: 6 })
    .map((ns) => ns.map((n, i) => ({ name: `n${i}`, ...n })));

  const gpuArb: fc.Arbitrary<Partial<TaskDescription>> = fc.oneof(
    { weight: 5, arbitrary: fc.constant({}) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 2 }).map((g) => ({ gpusPerRank: g })) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 9 }).map((k) => ({ gpusPerRank: k / 10 })) },
    {
      weight: 1,
      arbitrary: fc
        .uniqueArray(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 2 })
        .map((ix) => ({ gpuIndices: ix as [number, ...number[]] })),
    },
  );
  const taskArb: fc.Arbitrary<Partial<TaskDescription>> = fc
    .record({
      ranks: fc.oneof(
        { weight: 4, arbitrary: fc.constant(1) },
        { weight: 2, arbitrary: fc.integer({ min: 2, max: 4 }) },
      ),
      coresPerRank: fc.oneof(
        { weight: 10, arbitrary: fc.integer({ min: 1, max: 4 }) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 17 }) },
      ),
      gpu: gpuArb,
      memPerRankMb: fc.oneof(
        { weight: 3, arbitrary: fc.constant(0) },
        { weight: 2, arbitrary: fc.integer({ min: 1, max: 8 }).map((k) => k * 256) },
      ),
      priority: fc.integer({ min: -1, max: 2 }),
      colocate: fc.oneof(
        { weight: 6, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.constantFrom('A', 'B') },
      ),
      exclusive: fc.oneof(
        { weight: 6, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.constantFrom('X', 'Y') },
      ),
    })
    .map(({ gpu, colocate, exclusive, ...rest }) => {
      const d: Partial<TaskDescription> = { ...rest, ...gpu };
      if (colocate !== undefined || exclusive !== undefined) {
        d.tags = {};
        if (colocate !== undefined) d.tags.colocate = colocate;
        if (exclusive !== undefined) d.tags.exclusive = exclusive;
      }
      return d;
    });

  type Op =
    // lates[i]: task i was submitted that many tasks earlier than it arrives (-1: no seq)
    | { kind: 'submit'; tasks: Partial<TaskDescription>[]; lates?: number[] }
    | { kind: 'release'; pick: number }
    | { kind: 'cancel'; pick: number };
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('submit' as const),
        tasks: fc.array(taskArb, { minLength: 1, maxLength: 3 }),
        lates: fc.array(
          fc.oneof(
            { weight: 6, arbitrary: fc.constant(0) },
            { weight: 2, arbitrary: fc.integer({ min: 1, max: 6 }) },
            { weight: 1, arbitrary: fc.constant(-1) },
          ),
          { minLength: 3, maxLength: 3 },
        ),
      }),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  );

  /** Runs the ops, then releases running tasks one by one until none runs. */
  function play(pilot: NodeResources[], ops: Op[]): Model {
    const m = new Model(setup(pilot), pilot);
    check(
      JSON.stringify(m.s.core.freeCapacity()) === JSON.stringify(pilot.map(whole)),
      () => 'initial capacity',
    );
    let seq = 0;
    for (const o of ops) {
      if (o.kind === 'submit') {
        m.submit(
          o.tasks.map((d, i) => {
            const n = seq++;
            const late = o.lates?.[i] ?? 0;
            const t = pending(`t${n}`, d);
            if (late >= 0) t.seq = Math.max(0, n - late);
            return t;
          }),
        );
      } else if (o.kind === 'cancel') {
        // the head, a waiting task, or any: running, ended, or not arrived yet
        const queue = [...m.waiting];
        const head = o.pick % 4 === 1 ? m.s.core.reservedFor : undefined;
        const any = o.pick % 4 === 0 || queue.length === 0;
        m.cancel(head ?? (any ? `t${o.pick % (seq + 3)}` : queue[o.pick % queue.length]!));
      } else {
        const pool = [...m.running.keys(), ...m.released.slice(-2)];
        if (pool.length > 0) m.release(pool[o.pick % pool.length]!);
      }
    }
    // liveness: as running tasks end, every task that can ever fit gets to run
    for (let first = m.running.keys().next(); !first.done; first = m.running.keys().next()) {
      m.release(first.value);
    }
    check(m.waiting.size === 0, () => `still waiting: ${[...m.waiting].join(', ')}`);
    check(m.s.core.reservedFor === undefined, () => 'a reservation outlived the queue');
    // every release gave back exactly what was taken
    check(
      JSON.stringify(m.s.core.freeCapacity()) === JSON.stringify(pilot.map(whole)),
      () => `capacity after all releases: ${JSON.stringify(m.s.core.freeCapacity())}`,
    );
    m.s.rec.expectNoMore();
    return m;
  }

  it('keeps capacity, placement, ownership, order and reservation rules after every handler call', () => {
    fc.assert(
      fc.property(pilotArb, fc.array(opArb, { maxLength: 50 }), (pilot, ops) => {
        play(pilot, ops);
      }),
      { numRuns: 600, seed: 20_250_611 },
    );
  });

  it('keeps the rules for workloads of a few task kinds, where many tasks ask the same', () => {
    const kindsOp: fc.Arbitrary<Op | { kind: 'kinds'; picks: number[] }> = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('kinds' as const),
          picks: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        }),
      },
      {
        weight: 3,
        arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
    );
    fc.assert(
      fc.property(
        pilotArb,
        fc.array(taskArb, { minLength: 1, maxLength: 4 }),
        fc.array(kindsOp, { minLength: 10, maxLength: 60 }),
        (pilot, kinds, ops) => {
          const pick = (i: number) => kinds[i % kinds.length]!;
          play(
            pilot,
            ops.map((o) => (o.kind === 'kinds' ? { kind: 'submit', tasks: o.picks.map(pick) } : o)),
          );
        },
      ),
      { numRuns: 400, seed: 424_242 },
    );
  });

  it('keeps the rules under contention: small pilots, many tasks with tags and shared GPUs', () => {
    const small = fc
      .array(
        fc.record({
          cores: fc.integer({ min: 1, max: 4 }),
          gpus: fc.integer({ min: 1, max: 2 }),
          memMb: fc.constant(4_096),
        }),
        { minLength: 1, maxLength: 3 },
      )
      .map((ns) => ns.map((n, i) => ({ name: `n${i}`, ...n })));
    fc.assert(
      fc.property(small, fc.array(opArb, { minLength: 10, maxLength: 60 }), (pilot, ops) => {
        play(pilot, ops);
      }),
      { numRuns: 400, seed: 7_031_337 },
    );
  });
}

describe("AgentSchedulerCore: function tasks run on the agent's node", () => {
  const FN: Partial<TaskDescription> = { mode: 'function', function: { module: '/m.js' } };
  const fn = (uid: string, more: Partial<TaskDescription> = {}): TaskRecord =>
    pending(uid, { ...FN, ...more });

  it('places them on the home node only, executables anywhere', () => {
    const h = new CoreHarness();
    const core = new AgentSchedulerCore(
      h.effects({}),
      h.clock,
      [node('n1', 2), node('n2', 2)],
      'n2',
      1, // lanes of one call: a core per call (lanes are tested below)
    );
    const s = Object.assign(h, { core });
    const [a, b, c] = [fn('a'), fn('b'), fn('c')];
    started(s, a, b);
    expect([...nodesOf(a), ...nodesOf(b)]).toEqual(['n2', 'n2']);
    // n1 is free, but not theirs: c waits for a core of n2, an executable takes n1
    waiting(s, c);
    const x = pending('x');
    started(s, x);
    expect(nodesOf(x)).toEqual(['n1']);
    core.onReleased([{ uid: 'a' }]);
    expect(s.rec.take()).toEqual(['notify c AGENT_EXECUTING_PENDING', 'forward c']);
    expect(nodesOf(c)).toEqual(['n2']);
  });

  /** A 2-core agent node whose lanes hold `depth` calls. */
  const lanes = (depth: number, nodes = [node('n0', 2)]) => {
    const h = new CoreHarness();
    return Object.assign(h, {
      core: new AgentSchedulerCore(h.effects({}), h.clock, nodes, 'n0', depth, 0),
    });
  };
  const coreOf = (t: TaskRecord): number => t.slots![0]!.cores[0]!;

  it('queues plain calls in lanes, a free core first, then the lane with the fewest calls, up to the depth', () => {
    const s = lanes(4);
    const ts = Array.from({ length: 10 }, (_, i) => fn(`f${i}`));
    s.core.onTasks(ts);
    expect(s.rec.take()).toEqual([
      `notify ${[
        ...ts.map((t) => `${t.uid} AGENT_SCHEDULING`),
        ...ts.slice(0, 8).map((t) => `${t.uid} AGENT_EXECUTING_PENDING`),
      ].join(', ')}`,
      uidsLine('forward', ts.slice(0, 8)),
    ]);
    // one core each, alternating: each worker gets four calls
    expect(ts.slice(0, 8).map(coreOf)).toEqual([0, 1, 0, 1, 0, 1, 0, 1]);
    expect(freeCores(s)).toEqual({ n0: 0 });
    expect(s.core.queued).toBe(2);
  });

  it('fills a full lane again only once half its calls are done (calls go in bulks), and frees its core with the last', () => {
    const s = lanes(4);
    const ts = Array.from({ length: 12 }, (_, i) => fn(`f${i}`));
    s.core.onTasks(ts);
    s.rec.take();
    const lane0 = ts.slice(0, 8).filter((t) => coreOf(t) === 0);
    s.core.onReleased([{ uid: lane0[0]!.uid }]);
    expect(s.rec.take()).toEqual([]); // 3 of 4 left: still full
    s.core.onReleased([{ uid: lane0[1]!.uid }]);
    expect(s.rec.take()).toEqual([
      'notify f8 AGENT_EXECUTING_PENDING, f9 AGENT_EXECUTING_PENDING',
      'forward f8, f9',
    ]);
    expect([coreOf(ts[8]!), coreOf(ts[9]!)]).toEqual([0, 0]);
    // every call of lane 1 done: its core is free again, and taken by the next call at once
    s.core.onReleased(
      ts
        .slice(0, 8)
        .filter((t) => coreOf(t) === 1)
        .map((t) => ({ uid: t.uid })),
    );
    expect(s.rec.take()).toEqual([
      'notify f10 AGENT_EXECUTING_PENDING, f11 AGENT_EXECUTING_PENDING',
      'forward f10, f11',
    ]);
    expect([coreOf(ts[10]!), coreOf(ts[11]!)]).toEqual([1, 1]);
  });

  it('gives a call with a timeout, GPUs, memory, more cores or tags a core of its own', () => {
    const s = lanes(4, [{ name: 'n0', cores: 4, gpus: 1, memMb: 1_000 }]);
    const own = [
      fn('timed', { timeoutS: 5 }),
      fn('gpu', { gpusPerRank: 1 }),
      fn('mem', { memPerRankMb: 10 }),
      fn('tagged', { tags: { colocate: 'g' } }),
    ];
    s.core.onTasks(own);
    s.rec.take();
    expect(freeCores(s)).toEqual({ n0: 0 });
    const [later, plain] = [fn('timed2', { timeoutS: 5 }), fn('plain')];
    s.core.onTasks([later, plain]);
    // neither stacks on a core that runs a call of its own
    expect(s.rec.take()).toEqual(['notify timed2 AGENT_SCHEDULING, plain AGENT_SCHEDULING']);
    s.core.onReleased([{ uid: 'timed' }]);
    expect(s.rec.take()).toEqual(['notify timed2 AGENT_EXECUTING_PENDING', 'forward timed2']);
  });

  it('takes no more calls while a waiting task is owed the node: the lanes drain and it starts', () => {
    const s = lanes(4);
    const calls = Array.from({ length: 4 }, (_, i) => submitted(`f${i}`, i, FN));
    s.core.onTasks(calls);
    s.rec.take();
    const exe = submitted('exe', 10, { coresPerRank: 2 });
    const after = submitted('late', 11, FN);
    waiting(s, exe, after);
    // the lanes have room, but the executable comes first: nothing more goes in
    expect(s.core.reservedFor).toBe('exe');
    s.core.onReleased(calls.slice(0, 3).map((t) => ({ uid: t.uid })));
    expect(s.rec.take()).toEqual([]);
    s.core.onReleased([{ uid: 'f3' }]);
    expect(s.rec.take()).toEqual(['notify exe AGENT_EXECUTING_PENDING', 'forward exe']);
    s.core.onReleased([{ uid: 'exe' }]);
    expect(s.rec.take()).toEqual(['notify late AGENT_EXECUTING_PENDING', 'forward late']);
  });

  it("fails one the agent's node can never hold, naming it", () => {
    const h = new CoreHarness();
    const core = new AgentSchedulerCore(
      h.effects({}),
      h.clock,
      [node('n1', 8), node('n2', 2)],
      'n2',
    );
    const t = fn('big', { coresPerRank: 4 });
    core.onTasks([t]);
    expect(h.rec.take()).toEqual(['notify big AGENT_SCHEDULING, big FAILED']);
    expect(t.reason?.code).toBe('E_NEVER_FITS');
    expect(t.reason?.message).toContain("on the agent's node 'n2'");
  });
});
