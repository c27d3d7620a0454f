import type { Reason, TaskRecord } from '../generated';
import { AgentSchedulerCore } from '../components/agent-scheduler/core';
import { serviceEnvName } from '../components/manager-scheduler/dependencies';
import { ManagerSchedulerCore } from '../components/manager-scheduler/core';
import { reason } from '../components/shared/reasons';
import { nextAttempt } from '../components/shared/retry';
import { slotsByNode } from '../components/shared/slots-by-node';
import { born, shift, taskNotification, transition } from '../components/shared/transition';
import type { Notification, NotificationDetail } from '../states/notification';
import type { TaskFinal, TaskReady } from '../states/task-final';
import {
  COMPONENTS as C,
  FINAL_TASK_STATES,
  isFinalTaskState,
  type FinalTaskState,
  type TaskState,
} from '../states/task-model';
import { LaunchModel, launcherLimit } from './launch-cost';
import { pilotNotes } from './pilot-notes';
import type { SimPilot, SimTasks } from './setup';
import { UsageMeter } from './usage-meter';
import { VirtualClock } from './virtual-clock';

/** The session every simulated record names. */
export const SIM_SESSION = 'simulate';

/** Final states as stored per task (0: not final yet). */
export const FINAL_CODES: readonly ('' | FinalTaskState)[] = ['', ...FINAL_TASK_STATES];
const CODE_OF: Record<string, number> = Object.fromEntries(
  FINAL_TASK_STATES.map((s, i) => [s, i + 1]),
);

/** A task's index in the simulation: its submission order, which the cores never change. */
const idx = (t: TaskRecord): number => t.seq!;

type Slots = NonNullable<TaskRecord['slots']>;

/**
 * Runs the real ManagerSchedulerCore and one real AgentSchedulerCore per pilot on a virtual
 * clock, feeding them as the client and the agents do: every task is submitted at time 0 in one
 * bulk; a task the AgentScheduler hands on starts at once (a follow-on when the task it follows
 * ends; with a pilot's launchCosts, when launch-cost.ts says) and runs for its duration; its slots go back (`onReleased`) the moment it ends, then its
 * DONE reaches the ManagerScheduler (what frees pilot room and dependents), all ends of one
 * instant in one call each. Staging takes no time. A task that waits at a pilot until its
 * walltimeS would pass the pilot's end is given back and starts again elsewhere, as in a real
 * run. A pilot's runtime ends it: waiting and running tasks end FAILED (E_PILOT_ENDED).
 *
 * Per task it keeps only numbers (start, end, pilot, final state) and drops each record once the
 * task is final; the notifications are kept only when `record` is set (for a Profile).
 */
export class Simulation {
  readonly clock = new VirtualClock(0);
  /** When each task's command started and ended (virtual ms; NaN: never). */
  readonly start: Float64Array;
  readonly end: Float64Array;
  /** The pilot each task went to (-1: none). */
  readonly pilotOf: Int16Array;
  /** Its final state (index into FINAL_CODES; 0: not final). */
  readonly final: Uint8Array;
  /** Why each task that did not end DONE ended so. */
  readonly reasons = new Map<number, Reason>();
  /** When each pilot ended (virtual ms; NaN while it lives). */
  readonly pilotEnd: Float64Array;
  readonly meters: UsageMeter[];
  /** Every notification, in order, when recording. */
  readonly notes: Notification[] | undefined;
  /** Tasks not final yet. */
  open: number;

  private readonly records: (TaskRecord | undefined)[];
  private readonly agents: AgentSchedulerCore[];
  private readonly manager: ManagerSchedulerCore;
  private readonly running: Set<number>[];
  /** Per pilot, when placed tasks start (undefined: at once; setup.ts launchCosts). */
  private readonly launch: (LaunchModel | undefined)[];
  private readonly toAgent: TaskRecord[][];
  private finals: TaskFinal[] = [];
  private ready: TaskReady[] = [];
  private gone: number[] = [];
  /** Tasks whose end is due at the instant being run, and pilots whose runtime ran out. */
  private due: number[] = [];
  private expiring: number[] = [];
  /** Next attempts of tasks a draining pilot gave back, for the ManagerScheduler. */
  private again: TaskRecord[] = [];
  private byUid: Map<string, number> | undefined;

  constructor(
    readonly pilots: readonly SimPilot[],
    readonly tasks: SimTasks,
    record = false,
  ) {
    const n = tasks.uids.length;
    this.start = new Float64Array(n).fill(NaN);
    this.end = new Float64Array(n).fill(NaN);
    this.pilotOf = new Int16Array(n).fill(-1);
    this.final = new Uint8Array(n);
    this.open = n;
    this.records = new Array<TaskRecord | undefined>(n);
    this.notes = record ? [] : undefined;
    this.pilotEnd = new Float64Array(pilots.length).fill(NaN);
    this.meters = pilots.map((p) => new UsageMeter(p.nodes));
    this.running = pilots.map(() => new Set<number>());
    this.toAgent = pilots.map(() => []);
    this.launch = pilots.map((p) =>
      p.launchCosts === undefined ? undefined : new LaunchModel(p, p.launchCosts),
    );
    this.manager = new ManagerSchedulerCore(
      {
        forward: (ts) => this.toPilots(ts),
        notify: (ns) => this.heard(ns),
        // without a Profile only the final states it decides are heard (see move)
        finalOnly: !record,
      },
      this.clock,
      (uid) => {
        const code = this.final[this.indexOf(uid) ?? -1];
        return code ? (FINAL_CODES[code] as 'DONE') : undefined;
      },
    );
    this.agents = pilots.map(
      (p, k) =>
        new AgentSchedulerCore(
          {
            forward: (ts) => this.execute(k, ts),
            notify: (ns) => this.heard(ns),
            returnTasks: (ts, why) => this.givenBack(ts, why),
          },
          this.clock,
          p.nodes,
          undefined,
          undefined,
          p.backfillLimit,
          p.followOns,
          launcherLimit(p),
        ),
    );
  }

  /** Runs to the end: every task final, or nothing left that could move. */
  run(): void {
    const now = this.clock.now();
    this.pilots.forEach((p, k) => {
      this.notes?.push(...pilotNotes(p.uid, now));
      const cores = p.nodes.reduce((s, n) => s + n.cores, 0);
      const gpus = p.nodes.reduce((s, n) => s + n.gpus, 0);
      this.manager.onPilotAdded({ uid: p.uid, cores, gpus, active: true });
      if (Number.isFinite(p.runtimeMs)) {
        // as a real agent says it: tasks whose walltimeS outlasts the pilot go elsewhere
        this.manager.onPilotActive({ uid: p.uid, cores, gpus, drainInMs: p.runtimeMs });
        this.agents[k]!.setDrainPoint(now + p.runtimeMs);
        this.clock.setTimeout(() => this.expiring.push(k), p.runtimeMs);
      }
    });
    this.manager.onTasks(this.submit(now));
    this.drain();
    const onDue = (i: number): void => void this.due.push(i);
    while (this.open > 0 && this.clock.step(onDue)) {
      this.endDue();
      for (const k of this.expiring.splice(0)) this.expire(k);
      this.drain();
    }
    const t = this.clock.now();
    this.pilots.forEach((p, k) => {
      if (!Number.isNaN(this.pilotEnd[k]!)) return;
      this.pilotEnd[k] = t;
      this.notes?.push(...pilotNotes(p.uid, t, 'DONE'));
    });
  }

  /** The records the TaskManager would make: NEW, then TMGR_SCHEDULING_PENDING, in order. */
  private submit(now: number): TaskRecord[] {
    const { uids, descriptions } = this.tasks;
    const out: TaskRecord[] = [];
    for (let i = 0; i < uids.length; i++) {
      const d = descriptions[i]!;
      const rec: TaskRecord = {
        uid: uids[i]!,
        attempt: 1,
        state: 'NEW',
        session: SIM_SESSION,
        description: d,
        seq: i,
      };
      if (this.notes !== undefined) {
        const birth = taskNotification(rec.uid, 1, 'NEW', now, C.taskManager, undefined, d.mode);
        born(rec, birth);
        this.notes.push(birth);
      }
      this.move(rec, 'TMGR_SCHEDULING_PENDING', C.taskManager, now);
      this.records[i] = rec;
      out.push(rec);
    }
    return out;
  }

  /** Hands what the cores decided on to the next one, until nothing moves. */
  private drain(): void {
    for (let more = true; more;) {
      more = false;
      this.toAgent.forEach((list, k) => {
        if (list.length === 0) return;
        this.toAgent[k] = [];
        this.agents[k]!.onTasks(list);
        more = true;
      });
      if (this.finals.length > 0) {
        const f = this.finals;
        this.finals = [];
        this.manager.onTasksFinal(f);
        more = true;
      }
      if (this.ready.length > 0) {
        const r = this.ready;
        this.ready = [];
        this.manager.onTasksReady(r);
        more = true;
      }
      if (this.again.length > 0) {
        const a = this.again;
        this.again = [];
        this.manager.onReturned(a);
        this.manager.onTasks(a);
        more = true;
      }
      if (this.gone.length > 0 && this.finals.length === 0) {
        for (const k of this.gone.splice(0)) this.manager.onPilotGone(this.pilots[k]!.uid, 'DONE');
        more = true;
      }
    }
  }

  /** The ManagerScheduler placed tasks: staged in no time, they reach their pilot's agent. */
  private toPilots(tasks: TaskRecord[]): void {
    const now = this.clock.now();
    for (const t of tasks) {
      const k = this.pilots.findIndex((p) => p.uid === t.pilot);
      this.move(t, 'TMGR_STAGING_INPUT', C.managerInputStager, now);
      this.move(t, 'AGENT_STAGING_INPUT_PENDING', C.managerInputStager, now);
      this.move(t, 'AGENT_STAGING_INPUT', C.agentInputStager, now);
      this.move(t, 'AGENT_SCHEDULING_PENDING', C.agentInputStager, now);
      this.pilotOf[idx(t)] = k;
      this.toAgent[k]!.push(t);
    }
  }

  /** The AgentScheduler placed tasks: each starts now, or a follow-on when the one it follows ends. */
  private execute(k: number, tasks: TaskRecord[]): void {
    const now = this.clock.now();
    for (const t of tasks) {
      const i = idx(t);
      const follows = t.follows !== undefined ? this.indexOf(t.follows) : undefined;
      const after = follows !== undefined ? this.end[follows]! : now;
      const launched = this.launch[k]?.startAt(t, now, after) ?? after;
      let where: NotificationDetail | undefined;
      if (this.notes !== undefined) {
        where = { slots: slotsByNode(t.slots!) };
        if (t.follows !== undefined) where.follows = t.follows;
      }
      this.move(t, 'AGENT_EXECUTING', C.executor, now, where);
      this.start[i] = launched;
      this.end[i] = launched + this.tasks.durationMs[i]!;
      this.clock.at(this.end[i], i);
      this.running[k]!.add(i);
      this.meters[k]!.started(t.slots!, launched);
      if (t.description.mode === 'service') {
        const name = serviceEnvName(t.description.name ?? t.uid);
        this.ready.push({ uid: t.uid, attempt: 1, endpoint: 'simulated', name });
      }
    }
  }

  /**
   * A pilot gave back tasks too late to start before its drain point: as the client does, each
   * starts again as a new attempt that uses no retry, and may go to another pilot.
   */
  private givenBack(tasks: TaskRecord[], why: Reason): void {
    const now = this.clock.now();
    for (const t of tasks) {
      const next = nextAttempt(t, why, false, C.taskManager, now);
      this.notes?.push(next.note);
      this.records[idx(t)] = next.record;
      this.pilotOf[idx(t)] = -1;
      this.again.push(next.record);
    }
  }

  /** Tasks whose time is up end DONE: slots back to their agents, then DONE to the manager. */
  private endDue(): void {
    if (this.due.length === 0) return;
    const now = this.clock.now();
    const released: { uid: string }[][] = this.pilots.map(() => []);
    for (const i of this.due) {
      const t = this.records[i];
      if (t?.state !== 'AGENT_EXECUTING') continue; // its pilot ended it first
      const k = this.pilotOf[i]!;
      this.running[k]!.delete(i);
      this.meters[k]!.ended(t.slots!, now);
      const detail = this.exitDetail(t, i, now, { exitCode: 0, signal: null });
      this.move(t, 'AGENT_STAGING_OUTPUT_PENDING', C.executor, now, detail);
      this.move(t, 'AGENT_STAGING_OUTPUT', C.agentOutputStager, now);
      this.move(t, 'TMGR_STAGING_OUTPUT_PENDING', C.agentOutputStager, now);
      this.move(t, 'TMGR_STAGING_OUTPUT', C.managerOutputStager, now);
      this.move(t, 'DONE', C.managerOutputStager, now);
      released[k]!.push({ uid: t.uid });
      this.ended(i, 'DONE', now);
    }
    this.due = [];
    released.forEach((r, k) => {
      if (r.length > 0) this.agents[k]!.onReleased(r);
    });
  }

  /** Pilot `k`'s runtime ran out: what waits or runs there ends FAILED (E_PILOT_ENDED). */
  private expire(k: number): void {
    const now = this.clock.now();
    const p = this.pilots[k]!;
    this.pilotEnd[k] = now;
    const why = reason(
      'E_PILOT_ENDED',
      `pilot ${p.uid} ended before the task finished: its runtime of ${p.runtimeMs / 60_000} min ran out`,
      'Agent',
    );
    this.agents[k]!.onShutdown('FAILED', why);
    for (const i of this.running[k]!) {
      const t = this.records[i]!;
      this.meters[k]!.ended(t.slots!, now);
      this.end[i] = Math.max(now, this.start[i]!);
      t.reason = why;
      this.move(t, 'FAILED', C.executor, now, this.exitDetail(t, i, this.end[i], { reason: why }));
      this.ended(i, 'FAILED', now, why);
    }
    this.running[k]!.clear();
    this.gone.push(k);
    this.notes?.push(...pilotNotes(p.uid, now, 'DONE'));
  }

  /** The Executor's detail of an exit, only when recording (else nobody reads it). */
  private exitDetail(
    t: TaskRecord,
    i: number,
    exited: number,
    how: NotificationDetail,
  ): NotificationDetail | undefined {
    if (this.notes === undefined) return undefined;
    return { slots: slotsByNode(t.slots as Slots), launched: this.start[i]!, exited, ...how };
  }

  /** Notifications of the cores: kept when recording; final states are taken note of. */
  private heard(ns: Notification[]): void {
    for (const n of ns) {
      this.notes?.push(n);
      if (n.kind !== 'task' || !isFinalTaskState(n.state as TaskState)) continue;
      const i = this.indexOf(n.uid);
      // an older attempt's word (a pilot that gave the task back ends it) is fenced, as in a run
      if (i === undefined || n.attempt < (this.records[i]?.attempt ?? 0)) continue;
      this.ended(i, n.state as TaskState, n.ts, n.detail?.reason);
    }
  }

  /** Task `i` is final: the manager hears of it (once), its record goes. */
  private ended(i: number, state: TaskState, ts: number, why?: Reason): void {
    if (this.final[i] !== 0) return;
    this.final[i] = CODE_OF[state]!;
    if (Number.isNaN(this.start[i]!)) this.end[i] = NaN;
    else if (state !== 'DONE') this.end[i] = Math.min(this.end[i]!, ts);
    if (why !== undefined) this.reasons.set(i, why);
    const k = this.pilotOf[i]!;
    const uid = this.tasks.uids[i]!;
    const s = state as FinalTaskState;
    // one literal each: a property added later would cost each a property array
    this.finals.push(
      k >= 0
        ? { uid, attempt: 1, state: s, pilot: this.pilots[k]!.uid }
        : { uid, attempt: 1, state: s },
    );
    this.records[i] = undefined;
    this.open--;
  }

  /**
   * Moves a task through a hop of the components the simulation stands in for (TaskManager,
   * stagers, Executor), as they would. Without recording only the state is set (shift): the
   * notification would be garbage at once, and what the cores' quiet ones left on the record
   * (for a published one that never comes) would live as long as the record.
   */
  private move(
    t: TaskRecord,
    to: TaskState,
    by: string,
    now: number,
    d?: NotificationDetail,
  ): void {
    if (this.notes === undefined) shift(t, to, by);
    else this.notes.push(transition(t, to, by, now, d));
  }

  /** A task's index by uid (the map is built the first time one is asked: rarely needed). */
  private indexOf(uid: string): number | undefined {
    if (this.byUid === undefined) {
      this.byUid = new Map(this.tasks.uids.map((u, i) => [u, i]));
    }
    return this.byUid.get(uid);
  }
}
