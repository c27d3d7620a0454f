import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  AgentSchedulerCore,
  type NodeResources,
} from '../../../../src/components/agent-scheduler/core';
import type { AgentSchedulerEffects } from '../../../../src/components/agent-scheduler/effects';
import { IllegalTransitionError } from '../../../../src/errors';
import type { Notification, TaskDescription, TaskRecord } from '../../../../src/generated';
import { TASK_STATES } from '../../../../src/states/task-model';
import { FakeClock } from '../../../support/fake-clock';
import { notifyLine, taskIn, uidsLine } from '../../../support/fixtures';
import { EffectRecorder } from '../../../support/recorder';

const NODE: NodeResources = { name: 'n0', cores: 4, gpus: 2 };
const SHUTDOWN = {
  code: 'E_AGENT_SHUTDOWN',
  message: 'the agent is shutting down',
  component: 'Agent',
};

function setup(node: NodeResources = NODE) {
  const rec = new EffectRecorder();
  const clock = new FakeClock();
  const notes: Notification[] = [];
  const forwarded: TaskRecord[] = [];
  const effects: AgentSchedulerEffects = {
    notify: (ns) => {
      notes.push(...ns);
      rec.record(notifyLine(ns));
    },
    forward: (ts) => {
      forwarded.push(...ts);
      rec.record(uidsLine('forward', ts));
    },
  };
  const core = new AgentSchedulerCore(effects, clock, node);
  return { rec, clock, notes, forwarded, core };
}

function pending(uid: string, description: Partial<TaskDescription> = {}): TaskRecord {
  return taskIn('AGENT_SCHEDULING_PENDING', { uid, description });
}

/** Submits tasks that are expected to start at once, and drops the effects of their start. */
function started(s: ReturnType<typeof setup>, ...tasks: TaskRecord[]): void {
  s.core.onTasks(tasks);
  expect(s.rec.take()).toEqual([
    `notify ${[
      ...tasks.map((t) => `${t.uid} AGENT_SCHEDULING`),
      ...tasks.map((t) => `${t.uid} AGENT_EXECUTING_PENDING`),
    ].join(', ')}`,
    uidsLine('forward', tasks),
  ]);
}

describe('AgentSchedulerCore', () => {
  it('moves a task through AGENT_SCHEDULING to AGENT_EXECUTING_PENDING with slots on the node', () => {
    const { rec, clock, notes, core } = setup();
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
    expect(core.free).toEqual({ cores: 3, gpus: 2 });
    expect(core.queued).toBe(0);
    rec.expectNoMore();
  });

  it('gives a task as many distinct cores and whole GPUs as it asks', () => {
    const s = setup();
    const a = pending('a', { coresPerRank: 2, gpusPerRank: 1 });
    const b = pending('b', { coresPerRank: 2, gpusPerRank: 1 });
    started(s, a, b);
    expect(a.slots).toEqual([{ node: 'n0', cores: [0, 1], gpus: [0] }]);
    expect(b.slots).toEqual([{ node: 'n0', cores: [2, 3], gpus: [1] }]);
    expect(s.core.free).toEqual({ cores: 0, gpus: 0 });
    s.rec.expectNoMore();
  });

  it.each<[string, Partial<TaskDescription>, string, string[]]>([
    [
      'more cores per rank than the node has',
      { coresPerRank: 5 },
      'E_NEVER_FITS',
      ['5 cores', '4 cores'],
    ],
    ['more GPUs than the node has', { gpusPerRank: 3 }, 'E_NEVER_FITS', ['3 GPUs', '2 GPUs']],
    ['more than one rank', { ranks: 2 }, 'E_UNSUPPORTED', ['2 ranks', 'single-rank']],
    ['a fractional GPU', { gpusPerRank: 0.5 }, 'E_UNSUPPORTED', ['gpusPerRank 0.5']],
  ])(
    'fails a task that asks %s at once, naming what it asked and what the pilot has',
    (_what, desc, code, words) => {
      const { rec, notes, core } = setup();
      const t = pending('t1', desc);
      core.onTasks([t]);
      expect(rec.take()).toEqual(['notify t1 AGENT_SCHEDULING, t1 FAILED']);
      expect(t.state).toBe('FAILED');
      expect(t.slots).toBeUndefined();
      expect(t.reason?.code).toBe(code);
      expect(t.reason?.component).toBe('AgentScheduler');
      for (const w of words) expect(t.reason?.message).toContain(w);
      expect(t.reason?.detail).toEqual({
        asked: {
          ranks: desc.ranks ?? 1,
          coresPerRank: desc.coresPerRank ?? 1,
          gpusPerRank: desc.gpusPerRank ?? 0,
        },
        pilot: { nodes: 1, coresPerNode: 4, gpusPerNode: 2 },
      });
      expect(notes.at(-1)?.detail).toEqual({ reason: t.reason });
      expect(core.queued).toBe(0);
      expect(core.free).toEqual({ cores: 4, gpus: 2 });
      rec.expectNoMore();
    },
  );

  it('fails a never-fitting task at once even while the node is full', () => {
    const s = setup();
    started(s, pending('big', { coresPerRank: 4 }));
    s.core.onTasks([pending('huge', { coresPerRank: 8 }), pending('small')]);
    expect(s.rec.take()).toEqual([
      'notify huge AGENT_SCHEDULING, huge FAILED, small AGENT_SCHEDULING',
    ]);
    expect(s.core.queued).toBe(1);
    s.rec.expectNoMore();
  });

  it('fits a task that asks exactly the whole node', () => {
    const s = setup();
    const t = pending('all', { coresPerRank: 4, gpusPerRank: 2 });
    started(s, t);
    expect(t.slots).toEqual([{ node: 'n0', cores: [0, 1, 2, 3], gpus: [0, 1] }]);
    s.rec.expectNoMore();
  });

  it('keeps a task waiting while the node is full and starts it on the cores a release frees', () => {
    const s = setup();
    const first = ['a', 'b', 'c', 'd'].map((u) => pending(u));
    started(s, ...first);
    const e = pending('e');
    s.core.onTasks([e]);
    expect(s.rec.take()).toEqual(['notify e AGENT_SCHEDULING']);
    expect(e.state).toBe('AGENT_SCHEDULING');
    expect(e.slots).toBeUndefined();
    expect(s.core.queued).toBe(1);
    expect(s.core.free).toEqual({ cores: 0, gpus: 2 });

    s.core.onReleased([{ uid: 'c' }]);
    expect(s.rec.take()).toEqual(['notify e AGENT_EXECUTING_PENDING', 'forward e']);
    expect(e.slots).toEqual([{ node: 'n0', cores: first[2]!.slots![0]!.cores, gpus: [] }]);
    expect(s.core.queued).toBe(0);
    s.rec.expectNoMore();
  });

  it('frees a task’s slots exactly once, whatever repeats', () => {
    const s = setup();
    started(s, pending('a', { coresPerRank: 2, gpusPerRank: 1 }), pending('b'));
    expect(s.core.free).toEqual({ cores: 1, gpus: 1 });
    s.core.onReleased([{ uid: 'a' }, { uid: 'a' }]);
    expect(s.core.free).toEqual({ cores: 3, gpus: 2 });
    s.core.onReleased([{ uid: 'a' }]);
    s.core.onReleased([{ uid: 'nobody' }]);
    expect(s.core.free).toEqual({ cores: 3, gpus: 2 });
    s.core.onReleased([{ uid: 'b' }]);
    expect(s.core.free).toEqual({ cores: 4, gpus: 2 });
    s.core.onReleased([{ uid: 'b' }]);
    expect(s.core.free).toEqual({ cores: 4, gpus: 2 });
    s.rec.expectNoMore();
  });

  it('does not let a second release of a uid start a task on cores that are not free', () => {
    const s = setup({ name: 'n0', cores: 1, gpus: 0 });
    started(s, pending('a'));
    s.core.onTasks([pending('b')]);
    expect(s.rec.take()).toEqual(['notify b AGENT_SCHEDULING']);
    s.core.onReleased([{ uid: 'a' }]);
    expect(s.rec.take()).toEqual(['notify b AGENT_EXECUTING_PENDING', 'forward b']);
    s.core.onTasks([pending('c')]);
    expect(s.rec.take()).toEqual(['notify c AGENT_SCHEDULING']);
    s.core.onReleased([{ uid: 'a' }]); // stale repeat: b still holds the only core
    expect(s.core.free).toEqual({ cores: 0, gpus: 0 });
    expect(s.core.queued).toBe(1);
    s.rec.expectNoMore();
  });

  it('serves waiting tasks by priority, higher first, FIFO within a priority', () => {
    const s = setup({ name: 'n0', cores: 1, gpus: 0 });
    started(s, pending('busy'));
    const waiting = [
      pending('a0', { priority: 0 }),
      pending('b5', { priority: 5 }),
      pending('c5', { priority: 5 }),
      pending('dneg', { priority: -1 }),
      pending('e0'),
      pending('f9', { priority: 9 }),
    ];
    s.core.onTasks(waiting);
    s.rec.take();
    const order: string[] = [];
    let last = 'busy';
    for (let i = 0; i < waiting.length; i++) {
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

  it('lets smaller tasks behind a big one that does not fit now start (backfill)', () => {
    const s = setup();
    started(s, pending('half', { coresPerRank: 2 }));
    const big = pending('big', { coresPerRank: 4, priority: 10 });
    s.core.onTasks([big, pending('small1'), pending('small2'), pending('small3')]);
    expect(s.rec.take()).toEqual([
      'notify big AGENT_SCHEDULING, small1 AGENT_SCHEDULING, small2 AGENT_SCHEDULING, small3 AGENT_SCHEDULING, ' +
        'small1 AGENT_EXECUTING_PENDING, small2 AGENT_EXECUTING_PENDING',
      'forward small1, small2',
    ]);
    expect(s.core.queued).toBe(2);
    s.core.onReleased([{ uid: 'half' }]);
    // 2 cores free: big (4) still cannot start, small3 can
    expect(s.rec.take()).toEqual(['notify small3 AGENT_EXECUTING_PENDING', 'forward small3']);
    s.core.onReleased([{ uid: 'small1' }, { uid: 'small2' }, { uid: 'small3' }]);
    expect(s.rec.take()).toEqual(['notify big AGENT_EXECUTING_PENDING', 'forward big']);
    expect(big.slots?.[0]?.cores.slice().sort()).toEqual([0, 1, 2, 3]);
    s.rec.expectNoMore();
  });

  it('lets a task without GPUs pass one waiting for GPUs', () => {
    const s = setup();
    started(s, pending('gpu', { gpusPerRank: 2 }));
    s.core.onTasks([pending('gpu2', { gpusPerRank: 1 }), pending('cpu')]);
    expect(s.rec.take()).toEqual([
      'notify gpu2 AGENT_SCHEDULING, cpu AGENT_SCHEDULING, cpu AGENT_EXECUTING_PENDING',
      'forward cpu',
    ]);
    s.core.onReleased([{ uid: 'gpu' }]);
    expect(s.rec.take()).toEqual(['notify gpu2 AGENT_EXECUTING_PENDING', 'forward gpu2']);
    s.rec.expectNoMore();
  });

  it('cancels a waiting task at once and never starts it', () => {
    const s = setup({ name: 'n0', cores: 1, gpus: 0 });
    started(s, pending('busy'));
    const w = pending('w');
    s.core.onTasks([w, pending('x')]);
    s.rec.take();
    s.core.onCancel(['w']);
    expect(s.rec.take()).toEqual(['notify w CANCELED']);
    expect(w.state).toBe('CANCELED');
    expect(s.notes.at(-1)?.detail).toEqual({
      reason: {
        code: 'E_CANCELED',
        message: 'task canceled by the user',
        component: 'AgentScheduler',
      },
    });
    expect(s.core.queued).toBe(1);
    s.core.onReleased([{ uid: 'busy' }]);
    expect(s.rec.take()).toEqual(['notify x AGENT_EXECUTING_PENDING', 'forward x']);
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
    expect(s.core.free).toEqual({ cores: 3, gpus: 2 });
    s.rec.expectNoMore();
  });

  it('does nothing on a cancel for a task it has already handed on', () => {
    const s = setup();
    const t = pending('t1');
    started(s, t);
    s.core.onCancel(['t1']);
    expect(t.state).toBe('AGENT_EXECUTING_PENDING');
    expect(s.core.free).toEqual({ cores: 3, gpus: 2 });
    s.rec.expectNoMore();
  });

  it.each(['FAILED', 'CANCELED'] as const)(
    'ends every waiting task %s on shutdown, in one notify',
    (final) => {
      const s = setup({ name: 'n0', cores: 1, gpus: 0 });
      const running = pending('running');
      started(s, running);
      const a = pending('a');
      const b = pending('b', { priority: 3 });
      s.core.onTasks([a, b]);
      s.rec.take();
      s.core.onShutdown(final, SHUTDOWN);
      expect(s.rec.take()).toEqual([`notify a ${final}, b ${final}`]);
      expect(a.state).toBe(final);
      expect(a.reason).toEqual(SHUTDOWN);
      expect(s.notes.at(-1)?.detail).toEqual({ reason: SHUTDOWN });
      expect(running.state).toBe('AGENT_EXECUTING_PENDING');
      expect(s.core.queued).toBe(0);
      s.core.onReleased([{ uid: 'running' }]);
      s.core.onShutdown(final, SHUTDOWN);
      s.rec.expectNoMore();
    },
  );

  it('makes one notify and one forward call per handler call, however big the bulk', () => {
    const s = setup({ name: 'n0', cores: 10, gpus: 0 });
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
    const others = TASK_STATES.filter((st) => st !== 'AGENT_SCHEDULING_PENDING');

    it('receives a task in AGENT_SCHEDULING_PENDING and walks it through every state it owns', () => {
      const s = setup();
      const t = pending('t1');
      const seen: string[] = [t.state];
      s.core.onTasks([t]);
      seen.push(...s.notes.map((n) => n.state));
      expect(seen).toEqual([
        'AGENT_SCHEDULING_PENDING',
        'AGENT_SCHEDULING',
        'AGENT_EXECUTING_PENDING',
      ]);
      s.rec.take();
      s.rec.expectNoMore();
    });

    it.each(others)('throws IllegalTransitionError for a task handed over in %s', (state) => {
      const s = setup();
      const t = taskIn(state);
      expect(() => s.core.onTasks([t])).toThrow(IllegalTransitionError);
      expect(t.state).toBe(state);
      s.rec.expectNoMore();
    });

    it.each(others)(
      'throws for a task handed over in %s even when its cancel came first',
      (state) => {
        const s = setup();
        s.core.onCancel(['t1']);
        const t = taskIn(state);
        expect(() => s.core.onTasks([t])).toThrow(IllegalTransitionError);
        expect(t.state).toBe(state);
        s.rec.expectNoMore();
      },
    );

    it('rejects a bulk holding a task in another state without touching any of it', () => {
      const s = setup();
      const ok = pending('ok');
      const wrong = taskIn('AGENT_EXECUTING_PENDING', { uid: 'wrong' });
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
      expect(s.core.free).toEqual({ cores: 4, gpus: 2 });
      expect(s.core.queued).toBe(0);
      s.rec.expectNoMore();
    });
  });

  describe('property: never more cores allocated than exist', () => {
    type Op =
      | { kind: 'submit'; cores: number; gpus: number; priority: number; n: number }
      | { kind: 'release'; pick: number }
      | { kind: 'cancel'; pick: number };
    type Amount = { cores: number; gpus: number };

    const nodeArb = fc.record({
      cores: fc.integer({ min: 1, max: 12 }),
      gpus: fc.integer({ min: 0, max: 4 }),
    });
    // sizes reach past the node so that never-fitting tasks are drawn too
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        kind: fc.constant('submit' as const),
        cores: fc.integer({ min: 1, max: 14 }),
        gpus: fc.integer({ min: 0, max: 5 }),
        priority: fc.integer({ min: -1, max: 2 }),
        n: fc.integer({ min: 1, max: 3 }),
      }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }),
    );

    const asks = (t: TaskRecord): Amount => ({
      cores: t.description.coresPerRank ?? 1,
      gpus: t.description.gpusPerRank ?? 0,
    });

    /** What the recorded effects say the core did, checked against the core after every call. */
    class Follower {
      readonly all = new Map<string, TaskRecord>();
      readonly holding = new Map<string, { cores: number[]; gpus: number[] }>();
      readonly waiting = new Set<string>();

      constructor(
        private readonly s: ReturnType<typeof setup>,
        private readonly node: NodeResources,
      ) {}

      /** Reads one handler call's effects; returns what the tasks it started took. */
      follow(): Amount {
        const kinds = this.s.rec.take().map((c) => c.split(' ')[0]);
        expect(['', 'notify', 'notify,forward']).toContain(kinds.join(','));
        const started: Amount = { cores: 0, gpus: 0 };
        for (const n of this.s.notes) {
          const t = this.all.get(n.uid)!;
          switch (n.state) {
            case 'AGENT_SCHEDULING':
              this.waiting.add(n.uid);
              break;
            case 'CANCELED':
              this.waiting.delete(n.uid);
              break;
            case 'FAILED': {
              expect(this.waiting.delete(n.uid)).toBe(true);
              const a = asks(t);
              expect(a.cores > this.node.cores || a.gpus > this.node.gpus).toBe(true);
              break;
            }
            case 'AGENT_EXECUTING_PENDING': {
              expect(this.waiting.delete(n.uid)).toBe(true);
              expect(t.slots).toHaveLength(1);
              const slot = t.slots![0]!;
              expect(slot.node).toBe(this.node.name);
              expect({ cores: slot.cores.length, gpus: slot.gpus.length }).toEqual(asks(t));
              this.holding.set(n.uid, { cores: slot.cores, gpus: slot.gpus });
              started.cores += slot.cores.length;
              started.gpus += slot.gpus.length;
              break;
            }
            default:
              throw new Error(`unexpected notification ${n.uid} ${n.state}`);
          }
        }
        expect(this.s.forwarded.map((t) => t.uid)).toEqual(
          this.s.notes.filter((n) => n.state === 'AGENT_EXECUTING_PENDING').map((n) => n.uid),
        );
        this.s.notes.length = 0;
        this.s.forwarded.length = 0;
        this.checkInvariants();
        return started;
      }

      private checkInvariants(): void {
        const { core } = this.s;
        const held = [...this.holding.values()];
        for (const [kind, size] of [
          ['cores', this.node.cores],
          ['gpus', this.node.gpus],
        ] as const) {
          const ids = held.flatMap((h) => h[kind]);
          expect(new Set(ids).size).toBe(ids.length); // distinct
          expect(ids.filter((i) => !(Number.isInteger(i) && i >= 0 && i < size))).toEqual([]);
          expect(ids.length + core.free[kind]).toBe(size); // nothing lost, nothing made up
        }
        expect(core.queued).toBe(this.waiting.size);
        // nothing that fits the free slots is left waiting
        const fitting = [...this.waiting].filter((uid) => {
          const a = asks(this.all.get(uid)!);
          return a.cores <= core.free.cores && a.gpus <= core.free.gpus;
        });
        expect(fitting).toEqual([]);
      }
    }

    it('keeps allocations distinct, in range and within the node, and leaves nothing that fits waiting', () => {
      fc.assert(
        fc.property(nodeArb, fc.array(opArb, { maxLength: 60 }), (size, ops) => {
          const node: NodeResources = { name: 'n0', ...size };
          const s = setup(node);
          const f = new Follower(s, node);
          let seq = 0;
          for (const o of ops) {
            if (o.kind === 'submit') {
              const bulk = Array.from({ length: o.n }, () => {
                const t = pending(`t${seq++}`, {
                  coresPerRank: o.cores,
                  gpusPerRank: o.gpus,
                  priority: o.priority,
                });
                f.all.set(t.uid, t);
                return t;
              });
              s.core.onTasks(bulk);
              f.follow();
              continue;
            }
            const uid = `t${o.pick % (seq + 1)}`; // sometimes one not submitted (yet)
            if (o.kind === 'cancel') {
              s.core.onCancel([uid]);
              expect(f.follow()).toEqual({ cores: 0, gpus: 0 });
              continue;
            }
            // a release gives back exactly the task's slots, once
            const before = s.core.free;
            const h = f.holding.get(uid);
            f.holding.delete(uid);
            s.core.onReleased([{ uid }]);
            const started = f.follow();
            expect(s.core.free).toEqual({
              cores: before.cores + (h?.cores.length ?? 0) - started.cores,
              gpus: before.gpus + (h?.gpus.length ?? 0) - started.gpus,
            });
          }
          s.rec.expectNoMore();
        }),
        { numRuns: 300, seed: 20240601 },
      );
    });
  });
});
