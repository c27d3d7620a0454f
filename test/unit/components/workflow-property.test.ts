import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { ManagerInputStagerCore } from '../../../src/components/manager-input-stager/core';
import { cwdOnlyLookup } from '../../../src/components/manager-input-stager/resolve';
import { ManagerOutputStagerCore } from '../../../src/components/manager-output-stager/core';
import { ManagerSchedulerCore } from '../../../src/components/manager-scheduler/core';
import { canceledBy } from '../../../src/components/shared/canceled';
import { reason } from '../../../src/components/shared/reasons';
import { transition } from '../../../src/components/shared/transition';
import type { Notification, TaskRecord } from '../../../src/generated';
import { mulberry32 } from '../../../src/lib/prng';
import { isFinalState, ownerOf } from '../../../src/states/model';
import { StateTracker } from '../../../src/states/state-tracker';
import type { TaskFinal } from '../../../src/states/task-final';
import {
  COMPONENTS as C,
  TASK_MODEL,
  TASK_RETRY_STATE,
  isFinalTaskState,
  type FinalTaskState,
  type TaskState,
} from '../../../src/states/task-model';
import { FakeClock } from '../../support/fake-clock';
import {
  checkStates,
  expectedEnds,
  workflowArb,
  type Outcome,
  type WorkflowTask,
} from '../../support/workflow-model';

/**
 * Issue #14's property: random DAGs with random outcomes and retries; every task ends in
 * exactly the state its dependencies and retries imply, and none waits forever. The client's
 * real cores (ManagerScheduler, ManagerInputStager, ManagerOutputStager) are wired as
 * src/client/pipeline/manager-pipeline.ts wires them, with a simulated store and simulated agents on one
 * or two pilots, and every hand-over between them happens in a random interleaving.
 */

interface PilotPlan {
  uid: string;
  cores: number;
  /** Steps at which the pilot is added to the task manager and its agent comes up. */
  addAt: number;
  activeAt: number;
  /** A pilot whose agent never comes up ends at this step instead (after p1 was added). */
  goneAt?: number;
}

interface Scenario {
  tasks: WorkflowTask[];
  /** Cores per task, at most the smallest pilot's. */
  sizes: number[];
  /** Priority per task (0-2); which go pinned to p1 (only when p1 is there from the start). */
  priorities: number[];
  pinned: boolean[];
  /** The tasks go in submission calls: task i in call batchOf[i] (non-decreasing). */
  batchOf: number[];
  /** When each call is made (a step). */
  submitAt: number[];
  pilots: PilotPlan[];
  /** A stray user cancel per task: steps after its submission, or null. */
  strays: (number | null)[];
  /** Seed of the interleaving. */
  seed: number;
}

const pilotArb = (uid: string): fc.Arbitrary<PilotPlan> =>
  fc.record({
    uid: fc.constant(uid),
    cores: fc.integer({ min: 1, max: 16 }),
    addAt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 60 })),
    activeAt: fc.integer({ min: 0, max: 60 }),
  });

const scenarioArb: fc.Arbitrary<Scenario> = workflowArb().chain((tasks) => {
  const n = tasks.length;
  return fc
    .record({
      pilots: fc.oneof(
        pilotArb('p1').map((p) => [p]),
        fc.tuple(pilotArb('p1'), pilotArb('p2')),
        fc
          .tuple(pilotArb('p1'), pilotArb('p2'), fc.integer({ min: 0, max: 100 }))
          .map(([p1, p2, later]) => [p1, { ...p2, goneAt: p1.addAt + later }]),
      ),
      cuts: fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, n - 1) }), { maxLength: 2 }),
      submitAt: fc.array(fc.integer({ min: 0, max: 80 }), { minLength: 3, maxLength: 3 }),
      fractions: fc.array(fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), {
        minLength: n,
        maxLength: n,
      }),
      priorities: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: n, maxLength: n }),
      pinned: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      strays: fc.array(
        fc.oneof(
          { weight: 12, arbitrary: fc.constant(null) },
          { weight: 1, arbitrary: fc.integer({ min: 0, max: 150 }) },
        ),
        { minLength: n, maxLength: n },
      ),
      seed: fc.integer(),
    })
    .map(({ pilots, cuts, submitAt, fractions, priorities, pinned, strays, seed }) => {
      const smallest = Math.min(...pilots.map((p) => p.cores));
      const bounds = [...cuts].filter((c) => c < n).sort((a, b) => a - b);
      return {
        tasks,
        sizes: fractions.map((f) => 1 + Math.floor(f * smallest)),
        priorities,
        // a task pinned to a pilot not added yet fails at once: pin only to one there first
        pinned: pinned.map((p) => p && pilots[0].addAt === 0),
        batchOf: tasks.map((_, i) => bounds.filter((b) => b <= i).length),
        submitAt: [...submitAt].sort((a, b) => a - b),
        pilots,
        strays,
        seed,
      };
    });
});

/** A simulated agent: what it was given, what it holds, and cancels heard before its task. */
class Agent {
  readonly inbox: TaskRecord[] = [];
  readonly control: string[][] = [];
  readonly held = new Map<string, { task: TaskRecord; running: boolean }>();
  readonly canceledEarly = new Set<string>();
}

/** What one simulated run left: what was told, what was delivered, what still waits. */
class Simulation {
  private readonly clock = new FakeClock();
  private readonly rnd: () => number;
  private step = 0;
  private readonly events: { at: number; fn: () => void }[] = [];
  private readonly byUid: Map<string, WorkflowTask>;

  /** Every notification, per task, in the order its holders sent them (the authority). */
  readonly told = new Map<string, Notification[]>();
  /** The store: sent, not yet delivered to the client (arrives in any order). */
  private readonly store: Notification[] = [];
  private readonly tracker = new StateTracker(TASK_MODEL, TASK_RETRY_STATE);
  /** The callbacks the client fires (StateTracker deliveries), per task. */
  readonly delivered = new Map<string, { state: TaskState; attempt: number }[]>();
  readonly deliveredFinal = new Map<string, FinalTaskState>();

  private readonly toScheduler: TaskRecord[] = [];
  private readonly toInputStager: TaskRecord[] = [];
  private readonly toOutputStager: TaskRecord[] = [];
  readonly agents = new Map<string, Agent>();
  readonly scheduler: ManagerSchedulerCore;
  private readonly inputStager: ManagerInputStagerCore;
  private readonly outputStager: ManagerOutputStagerCore;

  /** Tasks the user canceled (outside their scripts) while an attempt was live: uid -> attempt. */
  readonly userCanceled = new Map<string, number>();
  /** The states stray cancels found their tasks in (coverage). */
  readonly strayHits: string[] = [];
  private seq = 0;

  constructor(private readonly sc: Scenario) {
    this.rnd = mulberry32(sc.seed);
    this.byUid = new Map(sc.tasks.map((t) => [t.uid, t]));
    const notify = (ns: Notification[]): void => this.notify(ns);
    this.scheduler = new ManagerSchedulerCore(
      { notify, forward: (ts) => this.toInputStager.push(...ts) },
      this.clock,
      (uid) => this.deliveredFinal.get(uid),
    );
    this.inputStager = new ManagerInputStagerCore(
      {
        notify,
        forwardToPilot: (pilot, ts) => this.agents.get(pilot)!.inbox.push(...ts),
        retry: (ts) => this.toScheduler.push(...ts),
      },
      this.clock,
      cwdOnlyLookup('/'),
    );
    // as the pipeline does: the output stager's final word reaches the scheduler at once
    const ended = (ns: Notification[]): void => {
      this.notify(ns);
      const finals = ns.filter((n) => isFinalState(n.state)).map(finalOf);
      if (finals.length > 0) this.scheduler.onTasksFinal(finals);
    };
    this.outputStager = new ManagerOutputStagerCore(
      { notify: ended, retry: (ts) => this.toScheduler.push(...ts) },
      this.clock,
    );
    this.plan();
  }

  /** Runs until nothing is left to do; each step does one thing, chosen at random. */
  run(): void {
    for (let guard = 0; ; guard++) {
      if (guard > 100_000) throw new Error('the simulation did not settle');
      this.fireDue();
      const actions = this.actions();
      if (actions.length === 0) {
        const next = Math.min(...this.events.map((e) => e.at));
        if (!Number.isFinite(next)) return;
        this.step = next;
        continue;
      }
      actions[Math.floor(this.rnd() * actions.length)]!();
      this.step++;
      this.clock.advance(1);
    }
  }

  /** What could happen next: one delivery per queue, one move per agent and kind. */
  private actions(): (() => void)[] {
    const out: (() => void)[] = [];
    if (this.toScheduler.length > 0) {
      out.push(() => this.scheduler.onTasks(this.bulk(this.toScheduler)));
    }
    if (this.toInputStager.length > 0) {
      out.push(() => this.inputStager.onTasks(this.bulk(this.toInputStager)));
    }
    if (this.toOutputStager.length > 0) {
      out.push(() => {
        const ts = this.bulk(this.toOutputStager);
        this.scheduler.onReturned(ts);
        this.outputStager.onTasks(ts);
      });
    }
    if (this.store.length > 0) out.push(() => this.deliverFromStore());
    for (const agent of this.agents.values()) {
      if (agent.inbox.length > 0) out.push(() => this.arrive(agent, this.bulk(agent.inbox)));
      if (agent.control.length > 0) out.push(() => this.cancelAtAgent(agent));
      const held = [...agent.held.values()];
      const waiting = held.filter((h) => !h.running);
      if (waiting.length > 0) out.push(() => this.start(agent, this.pick(waiting).task));
      const done = held.filter((h) => h.running && this.outcome(h.task) !== 'cancel');
      if (done.length > 0) out.push(() => this.finish(agent, this.pick(done).task));
    }
    return out;
  }

  /** Submission calls, pilots coming, stray cancels: at their steps. */
  private plan(): void {
    const { tasks, batchOf, submitAt, pilots, strays } = this.sc;
    this.planPilots(pilots);
    for (let b = 0; b <= batchOf[batchOf.length - 1]!; b++) {
      const batch = tasks.filter((_, i) => batchOf[i] === b);
      this.at(submitAt[b]!, () => this.submit(batch));
    }
    tasks.forEach((t, i) => {
      const stray = strays[i];
      if (stray != null) this.at(submitAt[batchOf[i]!]! + stray, () => this.cancel(t.uid, true));
    });
  }

  /**
   * Pilots come: added as active, or told of their agents before or after they were added; or
   * one never comes up and ends (what waits goes to the other).
   */
  private planPilots(pilots: PilotPlan[]): void {
    for (const p of pilots) {
      if (p.goneAt !== undefined) {
        this.at(p.addAt, () =>
          this.scheduler.onPilotAdded({ uid: p.uid, cores: p.cores, gpus: 0 }),
        );
        this.at(p.goneAt, () => this.scheduler.onPilotGone(p.uid, 'FAILED'));
        continue;
      }
      this.at(Math.min(p.addAt, p.activeAt), () => this.agents.set(p.uid, new Agent()));
      const active = p.activeAt === p.addAt;
      this.at(p.addAt, () =>
        this.scheduler.onPilotAdded({ uid: p.uid, cores: p.cores, gpus: 0, active }),
      );
      if (!active) {
        this.at(p.activeAt, () =>
          this.scheduler.onPilotActive({ uid: p.uid, cores: p.cores, gpus: 0 }),
        );
      }
    }
  }

  /** The TaskManager takes a call's tasks on (NEW -> TMGR_SCHEDULING_PENDING). */
  private submit(batch: WorkflowTask[]): void {
    const records = batch.map((t) => {
      const i = this.sc.tasks.indexOf(t);
      const r: TaskRecord = {
        uid: t.uid,
        attempt: 1,
        session: 's1',
        state: 'NEW',
        seq: this.seq++,
        description: {
          executable: '/bin/true',
          after: t.after,
          retries: t.retries,
          coresPerRank: this.sc.sizes[i]!,
          priority: this.sc.priorities[i]!,
        },
      };
      if (this.sc.pinned[i]!) r.description.pilot = 'p1';
      return r;
    });
    this.notify(records.map((r) => transition(r, 'TMGR_SCHEDULING_PENDING', C.taskManager, 0)));
    this.toScheduler.push(...records);
  }

  /**
   * The user cancels a task (TaskManager.cancelTasks): not one the client has seen end; every
   * client component hears at once, the agents over the control channel. Whether it hits an
   * attempt is what its holders last said.
   */
  private cancel(uid: string, stray: boolean): void {
    if (this.deliveredFinal.has(uid) || !this.told.has(uid)) return;
    const last = this.told.get(uid)!.at(-1)!;
    if (stray && !isFinalState(last.state)) {
      this.strayHits.push(last.state);
      if (!this.userCanceled.has(uid)) this.userCanceled.set(uid, last.attempt);
    }
    this.scheduler.onCancel([uid]);
    this.inputStager.onCancel([uid]);
    this.outputStager.onCancel([uid]);
    for (const agent of this.agents.values()) agent.control.push([uid]);
  }

  /** The agent's input stager and scheduler take tasks in (or cancel those canceled early). */
  private arrive(agent: Agent, tasks: TaskRecord[]): void {
    const notes: Notification[] = [];
    for (const t of tasks) {
      if (agent.canceledEarly.has(t.uid)) {
        notes.push(this.move(t, 'CANCELED', { reason: canceledBy(C.agentInputStager) }));
        continue;
      }
      for (const s of AGENT_ARRIVAL) notes.push(this.move(t, s));
      agent.held.set(t.uid, { task: t, running: false });
    }
    this.notify(notes);
  }

  /** The executor starts an attempt; a missing executable ends it here, for good. */
  private start(agent: Agent, t: TaskRecord): void {
    if (this.outcome(t) === 'notFound') {
      agent.held.delete(t.uid);
      const why = reason('E_EXEC_NOT_FOUND', 'no such executable', C.executor);
      t.reason = why;
      return this.notify([this.move(t, 'FAILED', { reason: why })]);
    }
    agent.held.get(t.uid)!.running = true;
    this.notify([this.move(t, 'AGENT_EXECUTING')]);
    // an attempt scripted to be canceled hangs until the user cancels it, a while later
    if (this.outcome(t) === 'cancel') {
      this.at(this.step + 1 + Math.floor(this.rnd() * 20), () => this.cancel(t.uid, false));
    }
  }

  /** The attempt ended as scripted: its record goes back to the ManagerOutputStager. */
  private finish(agent: Agent, t: TaskRecord): void {
    agent.held.delete(t.uid);
    const outcome = this.outcome(t);
    t.exitCode = outcome === 'ok' ? 0 : outcome === 'exit' ? 3 : null;
    t.signal = outcome === 'signal' ? 'SIGKILL' : outcome === 'timeout' ? 'SIGTERM' : null;
    if (outcome === 'timeout') t.reason = reason('E_TASK_TIMEOUT', 'timed out', C.executor);
    this.notify(AGENT_RETURN.map((s) => this.move(t, s)));
    this.toOutputStager.push(t);
  }

  /** A cancel reaches the agent: the holder of a task it has ends it; others are kept. */
  private cancelAtAgent(agent: Agent): void {
    for (const uid of agent.control.shift()!) {
      const h = agent.held.get(uid);
      if (h === undefined) {
        agent.canceledEarly.add(uid);
        continue;
      }
      agent.held.delete(uid);
      const holder = ownerOf(TASK_MODEL, h.task.state, 'CANCELED')!;
      this.notify([this.move(h.task, 'CANCELED', { reason: canceledBy(holder) })]);
    }
  }

  /** The store delivers some of what it has, in any order, as the TaskManager ingests it. */
  private deliverFromStore(): void {
    const n = 1 + Math.floor(this.rnd() * this.store.length);
    const finals: TaskFinal[] = [];
    for (let i = 0; i < n; i++) {
      const [note] = this.store.splice(Math.floor(this.rnd() * this.store.length), 1);
      for (const e of this.tracker.ingest(note!, note!.uid)) {
        let seen = this.delivered.get(e.uid);
        if (seen === undefined) this.delivered.set(e.uid, (seen = []));
        seen.push({ state: e.state, attempt: e.attempt });
        if (isFinalTaskState(e.state)) {
          this.deliveredFinal.set(e.uid, e.state);
          finals.push({ uid: e.uid, attempt: e.attempt, state: e.state });
        }
      }
    }
    if (finals.length === 0) return;
    this.scheduler.onTasksFinal(finals);
    this.inputStager.onTasksFinal(finals);
    this.outputStager.onTasksFinal(finals);
  }

  /** A transition made by the holder of the task's state (the agent's components). */
  private move(t: TaskRecord, to: TaskState, detail?: Notification['detail']): Notification {
    return transition(t, to, ownerOf(TASK_MODEL, t.state, to)!, this.clock.now(), detail);
  }

  private notify(ns: Notification[]): void {
    for (const n of ns) {
      let list = this.told.get(n.uid);
      if (list === undefined) this.told.set(n.uid, (list = []));
      list.push(n);
      this.store.push(n);
    }
  }

  private outcome(t: TaskRecord): Outcome {
    return this.byUid.get(t.uid)!.script[t.attempt - 1] ?? 'ok';
  }

  /** Takes 1..all items from the front of a queue (queues between components are FIFO). */
  private bulk<T>(queue: T[]): T[] {
    return queue.splice(0, 1 + Math.floor(this.rnd() * queue.length));
  }

  private pick<T>(items: T[]): T {
    return items[Math.floor(this.rnd() * items.length)]!;
  }

  private at(step: number, fn: () => void): void {
    this.events.push({ at: step, fn });
  }

  private fireDue(): void {
    for (;;) {
      const i = this.events.findIndex((e) => e.at <= this.step);
      if (i < 0) return;
      this.events.splice(i, 1)[0]!.fn();
    }
  }
}

const AGENT_ARRIVAL: TaskState[] = [
  'AGENT_STAGING_INPUT',
  'AGENT_SCHEDULING_PENDING',
  'AGENT_SCHEDULING',
  'AGENT_EXECUTING_PENDING',
];
const AGENT_RETURN: TaskState[] = [
  'AGENT_STAGING_OUTPUT_PENDING',
  'AGENT_STAGING_OUTPUT',
  'TMGR_STAGING_OUTPUT_PENDING',
];

function finalOf(n: Notification): TaskFinal {
  return { uid: n.uid, attempt: n.attempt, state: n.state as FinalTaskState };
}

/** Everything that does not hold after a run, as readable lines (empty: all is well). */
function problemsOf(sc: Scenario, sim: Simulation): string[] {
  const problems: string[] = [];
  const expected = expectedEnds(sc.tasks, sim.userCanceled, (u) => sim.deliveredFinal.get(u));
  for (const [pilot, agent] of sim.agents) {
    for (const uid of agent.held.keys()) problems.push(`${uid} is still held by ${pilot}'s agent`);
  }
  if (sim.scheduler.queued !== 0) problems.push(`${sim.scheduler.queued} tasks wait to be placed`);
  // what the scheduler counts as given to pilots: all must be back or ended by now
  const held = (sim.scheduler as unknown as { held: Map<string, unknown> }).held;
  if (held.size !== 0) problems.push(`room still held for ${[...held.keys()].join(', ')}`);
  for (const t of sc.tasks) {
    const want = expected.get(t.uid)!;
    const told = sim.told.get(t.uid) ?? [];
    problems.push(...checkStates(t.uid, told, 'notified'));
    problems.push(...checkStates(t.uid, sim.delivered.get(t.uid) ?? [], 'delivered'));
    const last = told.at(-1);
    if (last === undefined || !isFinalState(last.state)) {
      problems.push(`${t.uid} never ended (last ${last?.state ?? 'nothing'}); want ${want.state}`);
      continue;
    }
    const why = last.detail?.reason;
    const got = `${last.state} in attempt ${last.attempt} (${why?.code ?? 'no reason'})`;
    const wanted = `${want.state} in attempt ${want.attempts} (${want.code ?? 'no reason'})`;
    if (got !== wanted) problems.push(`${t.uid} ended ${got}; want ${wanted}`);
    if (sim.deliveredFinal.get(t.uid) !== want.state) {
      problems.push(`${t.uid} was delivered ${sim.deliveredFinal.get(t.uid)}`);
    }
    if (want.code === 'E_DEPENDENCY') {
      const d = why?.detail as { dependency?: string; on?: string; ended?: string } | undefined;
      const named = want.blockers!.find(
        (b) => b.task === d?.dependency && b.on === d.on && b.ended === d.ended,
      );
      if (named === undefined) {
        problems.push(
          `${t.uid} names ${JSON.stringify(d)}; want one of ${JSON.stringify(want.blockers)}`,
        );
      }
    }
    // each new attempt says how many retries were used: all of them charged here
    for (const n of told) {
      if (n.attempt > 1 && n.state === TASK_RETRY_STATE && n.detail?.retried !== n.attempt - 1) {
        problems.push(`${t.uid} attempt ${n.attempt} says retried ${n.detail?.retried}`);
      }
    }
  }
  return problems;
}

/** How often each kind of end and each stray-cancel state came up over the runs (coverage). */
class Coverage {
  readonly ends = new Map<string, number>();
  readonly strayStates = new Set<string>();
  retried = 0;

  add(sc: Scenario, sim: Simulation): void {
    const ends = expectedEnds(sc.tasks, sim.userCanceled, (u) => sim.deliveredFinal.get(u));
    for (const e of ends.values()) {
      const key = `${e.state} ${e.code ?? ''}`.trim();
      this.ends.set(key, (this.ends.get(key) ?? 0) + 1);
      if (e.attempts > 1) this.retried++;
    }
    for (const s of sim.strayHits) this.strayStates.add(s);
  }
}

describe('workflows: the reference model and the order check', () => {
  const task = (uid: string, over: Partial<WorkflowTask> = {}): WorkflowTask => ({
    uid,
    after: [],
    retries: 0,
    script: [],
    ...over,
  });

  it('ends tasks by their scripts and retries, and dependents by their conditions', () => {
    const ends = expectedEnds([
      task('a', { script: ['exit'] }),
      task('b', { after: [{ task: 'a', on: 'done' }] }),
      task('c', { after: [{ task: 'a', on: 'failed' }] }),
      task('d', {
        after: [
          { task: 'b', on: 'final' },
          { task: 'c', on: 'failed' },
        ],
      }),
      task('e', { retries: 2, script: ['exit', 'signal', 'ok'] }),
      task('f', { retries: 1, script: ['timeout', 'exit', 'ok'] }),
      task('g', { retries: 3, script: ['notFound'] }),
      task('h', { retries: 3, script: ['exit', 'cancel'] }),
      task('i', { script: ['ok'] }),
    ]);
    expect(Object.fromEntries(ends)).toEqual({
      a: { state: 'FAILED', attempts: 1, code: 'E_EXIT_CODE' },
      b: {
        state: 'CANCELED',
        attempts: 1,
        code: 'E_DEPENDENCY',
        blockers: [{ task: 'a', on: 'done', ended: 'FAILED' }],
      },
      c: { state: 'DONE', attempts: 1 },
      d: {
        state: 'CANCELED',
        attempts: 1,
        code: 'E_DEPENDENCY',
        blockers: [{ task: 'c', on: 'failed', ended: 'DONE' }],
      },
      e: { state: 'DONE', attempts: 3 },
      f: { state: 'FAILED', attempts: 2, code: 'E_EXIT_CODE' },
      g: { state: 'FAILED', attempts: 1, code: 'E_EXEC_NOT_FOUND' },
      h: { state: 'CANCELED', attempts: 2, code: 'E_CANCELED' },
      i: { state: 'DONE', attempts: 1 },
    });
  });

  it('ends a task the user canceled in that attempt, unless its agent had ended it first', () => {
    const dag = [
      task('a', { retries: 1, script: ['exit', 'notFound'] }),
      task('b', { after: [{ task: 'a', on: 'final' }] }),
    ];
    expect(expectedEnds(dag, new Map([['a', 2]])).get('a')).toEqual({
      state: 'CANCELED',
      attempts: 2,
      code: 'E_CANCELED',
    });
    const agentFirst = expectedEnds(dag, new Map([['a', 2]]), () => 'FAILED');
    expect(agentFirst.get('a')?.code).toBe('E_EXEC_NOT_FOUND');
    expect(() => expectedEnds(dag, new Map([['a', 3]]))).toThrow('never reaches');
  });

  it('finds steps the model does not have, wrong owners, and a retry by the wrong holder', () => {
    const steps = (...ss: [string, number, string][]) =>
      ss.map(([state, attempt, component]) => ({ state, attempt, component }));
    const good = steps(
      ['TMGR_SCHEDULING_PENDING', 1, 'TaskManager'],
      ['TMGR_SCHEDULING', 1, 'ManagerScheduler'],
      ['TMGR_STAGING_INPUT_PENDING', 1, 'ManagerScheduler'],
      ['TMGR_STAGING_INPUT', 1, 'ManagerInputStager'],
      ['TMGR_SCHEDULING_PENDING', 2, 'ManagerInputStager'],
      ['TMGR_SCHEDULING', 2, 'ManagerScheduler'],
      ['CANCELED', 2, 'ManagerScheduler'],
    );
    expect(checkStates('t', good, 'notified')).toEqual([]);
    const skipped = good.filter((s) => s.state !== 'TMGR_STAGING_INPUT_PENDING');
    expect(checkStates('t', skipped, 'notified')).toEqual([
      't step 2 (TMGR_STAGING_INPUT, attempt 1): TMGR_SCHEDULING -> TMGR_STAGING_INPUT by ManagerInputStager is not in the model',
    ]);
    const byOutput = good.map((s, i) => (i === 4 ? { ...s, component: 'ManagerOutputStager' } : s));
    expect(checkStates('t', byOutput, 'notified')).toEqual([
      't step 4 (TMGR_SCHEDULING_PENDING, attempt 2): started by ManagerOutputStager, but TMGR_STAGING_INPUT is not its state',
    ]);
    const wrongOwner = good.map((s, i) =>
      i === 1 ? { ...s, component: 'ManagerInputStager' } : s,
    );
    expect(checkStates('t', wrongOwner, 'notified')).toEqual([
      't step 1 (TMGR_SCHEDULING, attempt 1): TMGR_SCHEDULING_PENDING -> TMGR_SCHEDULING by ManagerInputStager is not in the model',
    ]);
    const twice = [...good, { state: 'FAILED', attempt: 2, component: 'ManagerScheduler' }];
    expect(checkStates('t', twice, 'notified')).toContain('t: 2 final states');
    // delivered: NEW first, an attempt may be missing, no components
    const delivered = [
      { state: 'NEW', attempt: 1 },
      { state: 'TMGR_SCHEDULING_PENDING', attempt: 1 },
      { state: 'TMGR_SCHEDULING_PENDING', attempt: 3 },
      { state: 'FAILED', attempt: 3 },
    ];
    expect(checkStates('t', delivered, 'delivered')).toEqual([]);
    expect(checkStates('t', delivered, 'notified')).not.toEqual([]);
  });
});

const RUNS = Number(process.env.PF_PROPERTY_RUNS ?? 300);
const SEED = Number(process.env.PF_PROPERTY_SEED ?? 14_014);

describe('workflows: random DAGs through the client cores', () => {
  it('ends every task as its dependencies, retries and script imply, and leaves none waiting', () => {
    const coverage = new Coverage();
    fc.assert(
      fc.property(scenarioArb, (sc) => {
        const sim = new Simulation(sc);
        sim.run();
        expect(problemsOf(sc, sim)).toEqual([]);
        coverage.add(sc, sim);
      }),
      { numRuns: RUNS, seed: SEED },
    );
    // the generator reaches every kind of end, and stray cancels meet tasks all along the way
    expect([...coverage.ends.keys()].sort()).toEqual([
      'CANCELED E_CANCELED',
      'CANCELED E_DEPENDENCY',
      'DONE',
      'FAILED E_EXEC_NOT_FOUND',
      'FAILED E_EXIT_CODE',
      'FAILED E_SIGNALED',
      'FAILED E_TASK_TIMEOUT',
    ]);
    expect(coverage.retried).toBeGreaterThan(RUNS);
    expect([...coverage.strayStates].sort()).toEqual([
      'AGENT_EXECUTING', // running at its agent
      'AGENT_EXECUTING_PENDING', // at its agent, not started
      'AGENT_STAGING_INPUT_PENDING', // on its way to its agent
      'TMGR_SCHEDULING', // waiting for its dependencies or a pilot
      'TMGR_SCHEDULING_PENDING', // on its way to the scheduler (a new attempt, or submitted)
      'TMGR_STAGING_INPUT_PENDING', // placed, on its way to the input stager
      'TMGR_STAGING_OUTPUT_PENDING', // handed back, on its way to the output stager
    ]);
  }, 60_000);
});
