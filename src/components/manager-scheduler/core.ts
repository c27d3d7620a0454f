import type { Reason, TaskRecord, WaitReason } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { TaskFinal, TaskReady } from '../../states/task-final';
import type { Notification, NotificationDetail } from '../../states/notification';
import { COMPONENTS, type AbortedTaskState, type FinalTaskState } from '../../states/task-model';
import { cancelIfAsked, canceledBy } from '../shared/canceled';
import { CancelSet, reason } from '../shared/reasons';
import { checkArrivals, shift, transition } from '../shared/transition';
import { DependencyGate, dependenciesOf, type Unmet } from './dependencies';
import type { ManagerSchedulerEffects } from './effects';
import { bestRoom, fitsAny, neverFits, PilotRoom, sizeOf, type Holding } from './pilot-room';
import type { PilotCapacity, Size } from './pilot-room';
import { noTimeLeft } from './pilot-time';
import { noPilotLeft, pilotCanceled, unmetReason } from './end-reasons';
import { ReadyQueue } from './ready-queue';
import { takeReleasedBy } from './released-by';
import { dependencyWait, pilotWait } from './wait-reasons';

const ME = COMPONENTS.managerScheduler;

export type { PilotCapacity } from './pilot-room';

/**
 * Owns TMGR_SCHEDULING. A task first waits for its dependencies (`after`, DependencyGate);
 * one that can never be met ends it CANCELED, naming the dependency and how it ended. Then it
 * waits in the ReadyQueue (priority, then submission order) until a pilot that is active and
 * has room takes it (late placement, PilotRoom): the least loaded such pilot, or the one it is
 * pinned to. An earlier task that has no pilot with room blocks later ones only on the pilots
 * it could use; others may take later tasks. Tasks wait while no pilot is added; once pilots
 * were added and every one has ended, no pilot can ever run them: they fail.
 */
export class ManagerSchedulerCore {
  private readonly pilots = new Map<string, PilotRoom>();
  /** The pilots' rooms in the map's order, made when first asked after a change. */
  private roomList: readonly PilotRoom[] | undefined;
  /** Pilots whose agents are up (reported in), with their real size, added or not. */
  private readonly up = new Map<string, PilotCapacity>();
  /** Pilots that have ended, with their final state. */
  private readonly gone = new Map<string, string>();
  /** Pilots that were added and have ended since (or had when added). */
  private readonly endedAdded = new Set<string>();
  private readonly gate: DependencyGate;
  private readonly ready = new ReadyQueue();
  /** Tasks pinned to a pilot that is not active yet, by pilot. */
  private readonly parked = new Map<string, TaskRecord[]>();
  /** When each parked task was parked (its waiting reason's time). */
  private readonly parkedSince = new Map<string, number>();
  /** Tasks given to a pilot and neither back nor ended: what they hold of its room. */
  private readonly held = new Map<string, Holding>();
  private readonly canceled = new CancelSet();
  /** Services that are ready and have not ended: where their dependents find them. */
  private readonly serving = new Map<string, TaskReady>();
  /** Services that let dependents go on 'ready': only their ends walk the queues. */
  private readonly lent = new Set<string>();
  private notes: Notification[] = [];
  private out: TaskRecord[] = [];
  /** Only final states are notified (see ManagerSchedulerEffects.finalOnly). */
  private readonly finalOnly: boolean;
  /** The pilots a task being placed could use (reused: placing allocates nothing per task). */
  private readonly usable: PilotRoom[] = [];

  constructor(
    private readonly effects: ManagerSchedulerEffects,
    private readonly clock: Clock,
    /** The final state a task of the session has reached, if it has (the client's view). */
    finalOf: (uid: string) => FinalTaskState | undefined = () => undefined,
  ) {
    this.gate = new DependencyGate(finalOf, (uid) => this.serving.has(uid));
    this.finalOnly = effects.finalOnly === true;
  }

  onTasks(tasks: TaskRecord[]): void {
    checkArrivals(tasks, 'TMGR_SCHEDULING_PENDING', 'TMGR_SCHEDULING', ME);
    const now = this.clock.now();
    // a service back for another attempt serves nowhere until that one is ready
    for (const task of tasks) {
      if (task.description.mode === 'service') this.serviceGone(task.uid, task.attempt - 1, now);
    }
    for (const task of tasks) {
      if (cancelIfAsked(task, this.canceled, ME, now, this.notes)) {
        this.cascade(task.uid, 'CANCELED', now);
        continue;
      }
      this.move(task, 'TMGR_SCHEDULING', now);
      const after = task.description.after;
      if (after === undefined || after.length === 0) this.admit(task, now);
      else this.hold(task, now);
    }
    this.place(now);
  }

  /**
   * A service's attempt (or an earlier one) no longer serves: it is not ready from now on, and
   * the tasks it let go that are still here wait again (for its next attempt, or its end).
   */
  onServiceGone(uid: string, attempt: number): void {
    const now = this.clock.now();
    this.serviceGone(uid, attempt, now);
    this.place(now);
  }

  private serviceGone(uid: string, attempt: number, now: number): void {
    const s = this.serving.get(uid);
    if (s !== undefined && s.attempt <= attempt) this.serving.delete(uid);
    if (!this.lent.has(uid)) return; // every task's end comes here: most let nothing go
    const { ready, parked, parkedSince } = this;
    for (const t of takeReleasedBy(uid, attempt, ready, parked, parkedSince)) this.hold(t, now);
  }

  private hold(task: TaskRecord, now: number): void {
    const held = this.gate.hold(task, dependenciesOf(task.description), now);
    if (held === 'go') this.letGo(task, now);
    else if (held !== 'wait') this.unmet(task, held, now);
  }

  /**
   * Tasks ended (wherever it was decided; a task may be told twice): their dependents may go
   * or never will, the room they held is free, cancels kept for them can go.
   */
  onTasksFinal(finals: readonly TaskFinal[]): void {
    this.canceled.forget(finals);
    const now = this.clock.now();
    for (const f of finals) {
      this.serviceGone(f.uid, f.attempt, now);
      this.release(f.uid);
      this.cascade(f.uid, f.state, now);
    }
    this.place(now);
  }

  /** Services became ready: their dependents on 'ready' may go, with their endpoints. */
  onTasksReady(ready: readonly TaskReady[]): void {
    const now = this.clock.now();
    for (const r of ready) {
      this.serving.set(r.uid, r);
      for (const t of this.gate.onReady(r.uid)) this.letGo(t, now);
    }
    this.place(now);
  }

  /**
   * Tasks came back from their pilots (handed back): the room they held is free. A service
   * that was ready there serves no more (before its room lets its dependents go).
   */
  onReturned(tasks: readonly (Pick<TaskRecord, 'uid'> & Partial<TaskRecord>)[]): void {
    const now = this.clock.now();
    for (const t of tasks) {
      if (t.endpoint !== undefined && t.attempt !== undefined) {
        this.serviceGone(t.uid, t.attempt, now);
      }
      this.release(t.uid);
    }
    this.place(now);
  }

  /**
   * A pilot tasks may go to (`active`: its agent is up); adding it again updates its size.
   * A pilot that has ended already counts as one that was added and ended.
   */
  onPilotAdded(pilot: PilotCapacity & { active?: boolean }): void {
    const now = this.clock.now();
    if (this.gone.has(pilot.uid)) {
      this.endedAdded.add(pilot.uid);
      this.replaceReady(now);
      return this.place(now);
    }
    const up = this.up.get(pilot.uid);
    let room = this.pilots.get(pilot.uid);
    if (room === undefined) {
      room = new PilotRoom(pilot.uid, pilot.cores, pilot.gpus);
      this.pilots.set(pilot.uid, room);
      this.roomList = undefined;
    }
    room.cores = up?.cores ?? pilot.cores;
    room.gpus = up?.gpus ?? pilot.gpus;
    room.nodes = up?.nodes ?? pilot.nodes ?? room.nodes;
    // an active pilot's size is its agent's report (PilotManager sizes it at agent_ready, and
    // a resumed one from the journal's record of that report)
    if (up !== undefined || pilot.active === true) room.reported = true;
    if (pilot.active === true || up !== undefined) this.activate(room);
    this.replaceReady(now);
    this.place(now);
  }

  /** A pilot's agent is up and reported what it really holds (added or not yet). */
  onPilotActive(pilot: PilotCapacity): void {
    if (this.gone.has(pilot.uid)) return;
    this.up.set(pilot.uid, pilot);
    const room = this.pilots.get(pilot.uid);
    if (room === undefined) return;
    room.cores = pilot.cores;
    room.gpus = pilot.gpus;
    room.nodes = pilot.nodes ?? room.nodes;
    room.reported = true;
    const now = this.clock.now();
    if (pilot.drainInMs !== undefined) room.drainsAt = now + pilot.drainInMs;
    this.activate(room);
    this.replaceReady(now);
    this.place(now);
  }

  /** A pilot reached a final state (`state`): no task goes there any more. */
  onPilotGone(uid: string, state: string): void {
    this.gone.set(uid, state);
    this.up.delete(uid);
    const room = this.pilots.get(uid);
    if (room !== undefined) {
      this.pilots.delete(uid);
      this.roomList = undefined;
      this.endedAdded.add(uid);
      for (const [task, b] of this.held) if (b.pilot === room) this.held.delete(task);
    }
    const now = this.clock.now();
    const parked = this.parked.get(uid) ?? [];
    this.parked.delete(uid);
    for (const t of parked) {
      this.parkedSince.delete(t.uid);
      // waiting for it when the user canceled it: canceled with it, as its started tasks are
      if (state !== 'CANCELED') this.admit(t, now);
      else this.end(t, 'CANCELED', pilotCanceled(uid), now);
    }
    this.replaceReady(now);
    this.place(now);
  }

  onCancel(uids: string[]): void {
    this.canceled.add(uids);
    const now = this.clock.now();
    for (const uid of uids) {
      const task = this.gate.take(uid) ?? this.ready.take(uid) ?? this.unpark(uid);
      if (task === undefined) continue;
      this.end(task, 'CANCELED', canceledBy(ME), now);
    }
    this.place(now);
  }

  onShutdown(final: AbortedTaskState, why: Reason): void {
    const now = this.clock.now();
    const all = [...this.gate.takeAll(), ...this.ready.takeAll()];
    for (const list of this.parked.values()) all.push(...list);
    this.parked.clear();
    this.parkedSince.clear();
    for (const t of all) this.notes.push(transition(t, final, ME, now, { reason: why }));
    this.flush();
  }

  /**
   * Why a task this scheduler holds waits, or undefined when it holds none by that uid. Worked
   * out when asked (explain) from what the scheduler keeps anyway: waiting costs nothing more.
   */
  whyWaiting(uid: string): WaitReason | undefined {
    const deps = this.gate.waiting(uid);
    if (deps !== undefined) return dependencyWait(deps.open, deps.since);
    const since = this.parkedSince.get(uid);
    const queued = since === undefined ? this.ready.get(uid) : undefined;
    if (since === undefined && queued === undefined) return undefined;
    const task = queued?.task ?? this.parkedTask(uid)!;
    return pilotWait(task, this.rooms(), since ?? queued!.since, this.clock.now());
  }

  private parkedTask(uid: string): TaskRecord | undefined {
    for (const list of this.parked.values()) for (const t of list) if (t.uid === uid) return t;
    return undefined;
  }

  /** Tasks this scheduler holds: waiting for dependencies, for a pilot, or for room. */
  get queued(): number {
    let parked = 0;
    for (const list of this.parked.values()) parked += list.length;
    return this.gate.size + this.ready.size + parked;
  }

  private activate(room: PilotRoom): void {
    if (room.active) return;
    room.active = true;
    const parked = this.parked.get(room.uid);
    if (parked === undefined) return;
    this.parked.delete(room.uid);
    const now = this.clock.now();
    for (const t of parked) {
      this.parkedSince.delete(t.uid);
      this.ready.add(t, now);
    }
  }

  /**
   * A task whose dependencies are met: it learns where the services it waited for on 'ready'
   * serve (PF_SERVICE_<NAME>), then is admitted.
   */
  private letGo(task: TaskRecord, now: number): void {
    if (task.description.after === undefined) return this.admit(task, now);
    for (const dep of dependenciesOf(task.description)) {
      const s = dep.on === 'ready' ? this.serving.get(dep.task) : undefined;
      if (s === undefined) continue;
      (task.services ??= {})[s.name] = s.endpoint;
      (task.readyOf ??= {})[dep.task] = s.attempt;
      this.lent.add(dep.task);
    }
    this.admit(task, now);
  }

  /** A task whose dependencies are met: fails at once if no pilot can ever run it, else queues. */
  private admit(task: TaskRecord, now: number): void {
    const d = task.description;
    const ranks = d.ranks ?? 1;
    const cores = ranks * (d.coresPerRank ?? 1);
    const gpus = ranks * (d.gpusPerRank ?? 0);
    if (d.pilot !== undefined) {
      const pinned = this.pilots.get(d.pilot);
      if (pinned === undefined) {
        const ended = this.gone.get(d.pilot);
        const known = [...this.pilots.keys()].join(', ') || 'none';
        const why =
          ended !== undefined
            ? `pinned pilot '${d.pilot}' has ended (${ended})`
            : `pinned pilot '${d.pilot}' is not added to this task manager (pilots: ${known})`;
        return this.end(task, 'FAILED', reason('E_NO_SUCH_PILOT', why, ME), now);
      }
      if (!fitsAny([pinned], cores, gpus, d.placement)) {
        return this.end(task, 'FAILED', neverFits(task, [pinned]), now);
      }
      if (!pinned.active) return this.park(pinned.uid, task, now);
      const late = noTimeLeft(task, [pinned], now);
      if (late !== undefined) return this.end(task, 'FAILED', late, now);
      return this.ready.add(task, now);
    }
    if (this.pilots.size === 0) {
      if (this.endedAdded.size === 0) return this.ready.add(task, now);
      return this.end(task, 'FAILED', noPilotLeft(this.endedAdded, this.gone), now);
    }
    const rooms = this.rooms();
    if (!fitsAny(rooms, cores, gpus, d.placement)) {
      return this.end(task, 'FAILED', neverFits(task, rooms), now);
    }
    const late = noTimeLeft(task, rooms, now);
    if (late !== undefined) return this.end(task, 'FAILED', late, now);
    this.ready.add(task, now);
  }

  /** The pilots changed: every queued task is checked again (one may fit no pilot now). */
  private replaceReady(now: number): void {
    for (const t of this.ready.takeAll()) this.admit(t, now);
  }

  /** Places queued tasks, in order, to active pilots with room, until no pilot has room. */
  private place(now: number): void {
    const active = [...this.pilots.values()].filter((p) => p.active);
    if (active.length > 0 && this.ready.size > 0) {
      /** Pilots an earlier task waits for: later ones may not take their room. */
      const blocked = new Set<PilotRoom>();
      this.ready.visit((task) => {
        if (blocked.size === active.length) return 'stop';
        const d = task.description;
        const size = sizeOf(d);
        const pilots = d.pilot !== undefined ? [this.pilots.get(d.pilot)!] : active;
        const usable = this.usable;
        const best = bestRoom(pilots, blocked, size, d, now, usable);
        if (best === undefined) {
          for (const p of usable) blocked.add(p);
          if (usable.length > 0) return 'keep';
          // no pilot has the time it needs, and none ever will (time only runs out): it fails
          const late = noTimeLeft(task, d.pilot !== undefined ? pilots : this.rooms(), now);
          if (late === undefined) return 'keep';
          this.end(task, 'FAILED', late, now);
          return 'take';
        }
        this.assign(task, best, size, now);
        return 'take';
      });
    }
    this.flush();
  }

  private assign(task: TaskRecord, p: PilotRoom, size: Size, now: number): void {
    task.pilot = p.uid;
    p.take(size);
    this.held.set(task.uid, { pilot: p, cores: size.cores, gpus: size.gpus, call: size.call });
    this.move(task, 'TMGR_STAGING_INPUT_PENDING', now, { pilot: p.uid });
    this.out.push(task);
  }

  private release(uid: string): void {
    const b = this.held.get(uid);
    if (b === undefined) return;
    this.held.delete(uid);
    b.pilot.giveBack(b);
  }

  private park(pilot: string, task: TaskRecord, now: number): void {
    this.parkedSince.set(task.uid, now);
    let list = this.parked.get(pilot);
    if (list === undefined) this.parked.set(pilot, (list = []));
    list.push(task);
  }

  private unpark(uid: string): TaskRecord | undefined {
    if (!this.parkedSince.delete(uid)) return undefined;
    for (const list of this.parked.values()) {
      const i = list.findIndex((t) => t.uid === uid);
      if (i >= 0) return list.splice(i, 1)[0];
    }
    return undefined;
  }

  private unmet(task: TaskRecord, u: Unmet, now: number): void {
    this.end(task, 'CANCELED', unmetReason(u), now);
  }

  /** Ends a task this scheduler holds; tasks waiting on it hear of it at once. */
  private end(task: TaskRecord, final: AbortedTaskState, why: Reason, now: number): void {
    task.reason = why;
    this.notes.push(transition(task, final, ME, now, { reason: why }));
    this.cascade(task.uid, final, now);
  }

  /** A task ended: its dependents go on, or end (and theirs after them). */
  private cascade(uid: string, final: FinalTaskState, now: number): void {
    const { go, never } = this.gate.onFinal(uid, final);
    for (const t of go) this.letGo(t, now);
    for (const [t, u] of never) this.unmet(t, u, now);
  }

  private rooms(): readonly PilotRoom[] {
    return (this.roomList ??= [...this.pilots.values()]);
  }

  /** A transition this scheduler owns short of a final state: notified unless finalOnly. */
  private move(
    task: TaskRecord,
    to: 'TMGR_SCHEDULING' | 'TMGR_STAGING_INPUT_PENDING',
    now: number,
    detail?: NotificationDetail,
  ): void {
    if (this.finalOnly) shift(task, to, ME);
    else this.notes.push(transition(task, to, ME, now, detail));
  }

  private flush(): void {
    const notes = this.notes;
    const out = this.out;
    this.notes = [];
    this.out = [];
    if (notes.length > 0) this.effects.notify(notes);
    if (out.length > 0) this.effects.forward(out);
  }
}
