import { describe, expect, it } from '@jest/globals';
import {
  AgentSchedulerCore,
  type NodeResources,
} from '../../../../src/components/agent-scheduler/core';
import {
  FOLLOW_COVER_MS,
  FOLLOW_MAX_DEPTH,
  FOLLOW_MAX_HOLD_MS,
} from '../../../../src/components/agent-scheduler/follow-ons';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import { CoreHarness, taskRecord } from '../../../support/core-harness';

const TWO_CORES: NodeResources = { name: 'n0', cores: 2, gpus: 0, memMb: 8_192 };
const ONE_CORE: NodeResources = { ...TWO_CORES, cores: 1 };

/** A scheduler of one 2-core node with follow-on starts on (as the agent runs it). */
function setup(nodes: NodeResources[] = [TWO_CORES]) {
  const h = new CoreHarness();
  const core = new AgentSchedulerCore(h.effects({}), h.clock, nodes, 'n0', undefined, 0, true);
  return Object.assign(h, { core });
}
type Setup = ReturnType<typeof setup>;

let next = 0;
function pending(description: Partial<TaskDescription> = {}, uid = `t${next++}`): TaskRecord {
  return taskRecord(uid, 'AGENT_SCHEDULING_PENDING', { description });
}

/** Runs `n` tasks of `ms` each through the node one at a time per core: the shape's pace. */
function warm(s: Setup, n: number, ms: number, description: Partial<TaskDescription> = {}): void {
  for (let i = 0; i < n; i++) {
    const t = pending(description);
    s.core.onTasks([t]);
    s.clock.advance(ms);
    s.core.onReleased([{ uid: t.uid }]);
  }
  s.forwarded.length = 0;
  s.rec.take();
}

/** Tasks forwarded since the last call: uid -> the uid it follows ('' for slots of its own). */
function forwarded(s: Setup): Record<string, string> {
  const out = Object.fromEntries(s.forwarded.map((t) => [t.uid, t.follows ?? '']));
  s.forwarded.length = 0;
  s.rec.take();
  return out;
}

describe('AgentSchedulerCore follow-on starts', () => {
  it('queues short tasks that do not fit on running ones of their shape, as deep as covers the cover time', () => {
    const s = setup();
    warm(s, 4, 1); // 1 ms each: FOLLOW_COVER_MS / 1 followers per running task, at most the most
    const depth = Math.min(FOLLOW_MAX_DEPTH, FOLLOW_COVER_MS);
    const tasks = Array.from({ length: 2 + 2 * depth + 3 }, () => pending());
    s.core.onTasks(tasks);
    const got = forwarded(s);
    const [a, b] = tasks;
    expect(got[a!.uid]).toBe('');
    expect(got[b!.uid]).toBe('');
    // the others queue alternately on the two running tasks, each behind the one before it
    expect(Object.keys(got)).toHaveLength(2 + 2 * depth);
    const tails = new Map([
      [a!.uid, a!.uid],
      [b!.uid, b!.uid],
    ]);
    for (const t of tasks.slice(2, 2 + 2 * depth)) {
      const follows = got[t.uid]!;
      const head = [...tails].find(([, tail]) => tail === follows)?.[0];
      expect(head).toBeDefined();
      tails.set(head!, t.uid);
      // a follower is given the slots of the chain's head
      expect(t.slots).toEqual(tasks.find((x) => x.uid === head)!.slots);
    }
    expect(s.core.queued).toBe(3); // the rest wait for slots as before
  });

  it('gives the slots back only with the last task of a chain, and starts the waiting then', () => {
    const s = setup([ONE_CORE]);
    warm(s, 4, 30); // 30 ms each: one follower (12 ms of cover, at least one)
    const [a, b, c] = [pending(), pending(), pending()];
    s.core.onTasks([a, b, c]);
    expect(forwarded(s)).toEqual({ [a.uid]: '', [b.uid]: a.uid });
    expect(s.core.queued).toBe(1);
    s.clock.advance(30);
    s.core.onReleased([{ uid: a.uid }]); // b runs on them now: c may follow b
    expect(forwarded(s)).toEqual({ [c.uid]: b.uid });
    s.core.onReleased([{ uid: b.uid }]);
    s.core.onReleased([{ uid: c.uid }]);
    expect(s.core.freeCapacity()[0]!.cores).toBe(1);
  });

  it('a follower released first (canceled while queued) keeps the slots with the running one', () => {
    const s = setup([ONE_CORE]);
    warm(s, 4, 30);
    const [a, b] = [pending(), pending()];
    s.core.onTasks([a, b]);
    expect(forwarded(s)).toEqual({ [a.uid]: '', [b.uid]: a.uid });
    s.core.onReleased([{ uid: b.uid }]);
    expect(s.core.freeCapacity()[0]!.cores).toBe(0);
    s.core.onReleased([{ uid: a.uid }]);
    expect(s.core.freeCapacity()[0]!.cores).toBe(1);
  });

  it('never queues behind slow tasks, nor before the pace is known', () => {
    const s = setup();
    warm(s, 3, 1); // too few measured
    s.core.onTasks([pending(), pending(), pending()]);
    expect(Object.values(forwarded(s))).toEqual(['', '']);
    expect(s.core.queued).toBe(1);

    const slow = setup();
    warm(slow, 8, FOLLOW_MAX_HOLD_MS + 1);
    slow.core.onTasks([pending(), pending(), pending()]);
    expect(Object.values(forwarded(slow))).toEqual(['', '']);
    expect(slow.core.queued).toBe(1);
  });

  it('does not queue behind a task that has run far longer than its shape does', () => {
    const s = setup();
    warm(s, 4, 1);
    const long = pending();
    s.core.onTasks([long]); // it runs on and on: say a sleep among quick tasks
    forwarded(s);
    s.clock.advance(2 * 1 + FOLLOW_COVER_MS + 1);
    const quick = pending();
    s.core.onTasks([quick]);
    expect(forwarded(s)).toEqual({ [quick.uid]: '' });
    const [x, y] = [pending(), pending()];
    s.core.onTasks([x, y]);
    // both queue on the quick one's core, none behind the long one
    expect(forwarded(s)).toEqual({ [x.uid]: quick.uid, [y.uid]: x.uid });
  });

  it('stops queueing once a shape turns slow', () => {
    const s = setup([ONE_CORE]);
    warm(s, 4, 1);
    warm(s, 8, 10 * FOLLOW_MAX_HOLD_MS); // the moving average forgets the fast ones
    s.core.onTasks([pending(), pending()]);
    expect(Object.values(forwarded(s))).toEqual(['']);
  });

  it('does not queue when other tasks wait: none is passed by a follower', () => {
    const s = setup([ONE_CORE]);
    warm(s, 4, 1);
    warm(s, 4, 1, { priority: 5 });
    // a task of another shape (a higher priority) waits: followers would take its turn
    const [a, big, b] = [pending(), pending({ coresPerRank: 1, priority: 5 }), pending()];
    s.core.onTasks([a]);
    s.core.onTasks([big, b]);
    expect(forwarded(s)).toEqual({ [a.uid]: '' });
    expect(s.core.queued).toBe(2);
    s.core.onReleased([{ uid: a.uid }]);
    expect(forwarded(s)).toEqual({ [big.uid]: '' });
  });

  it('neither follows nor is followed: several ranks, functions, services, mpirun, tags', () => {
    const kinds: Partial<TaskDescription>[] = [
      { ranks: 2 },
      { mode: 'service', executable: '/bin/true' },
      { launch: 'mpirun' },
      { tags: { colocate: 'g' } },
      { tags: { exclusive: 'x' } },
    ];
    for (const d of kinds) {
      const s = setup();
      warm(s, 4, 1, d);
      s.core.onTasks([pending(d), pending(d), pending(d), pending(d)]);
      expect(Object.values(forwarded(s)).filter((f) => f !== '')).toEqual([]);
    }
  });

  it('is off unless asked: a core without it keeps every waiting task', () => {
    const h = new CoreHarness();
    const core = new AgentSchedulerCore(h.effects({}), h.clock, [TWO_CORES], 'n0', undefined, 0);
    for (let i = 0; i < 8; i++) {
      const t = pending();
      core.onTasks([t]);
      core.onReleased([{ uid: t.uid }]);
    }
    h.forwarded.length = 0;
    core.onTasks([pending(), pending(), pending()]);
    expect(h.forwarded.filter((t) => t.follows !== undefined)).toEqual([]);
    expect(core.queued).toBe(1);
  });
});
