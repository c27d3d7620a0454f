import type { Reason, TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { Notification } from '../../states/notification';
import { COMPONENTS, type AbortedTaskState } from '../../states/task-model';
import { cancelIfAsked, canceledBy } from '../shared/canceled';
import { CancelSet, reason } from '../shared/reasons';
import { checkArrivals, transition } from '../shared/transition';
import { Backfill } from './backfill';
import { ShapeBlocking } from './blocking';
import type { ServiceEnd } from '../shared/service-ends';
import { DeadServices, type Released } from './dead-services';
import { DrainPoint } from './drain-point';
import type { AgentSchedulerEffects } from './effects';
import { followable, FollowOns } from './follow-ons';
import { Launchers, type LauncherLimit } from './launchers';
import { PilotFit } from './never-fits';
import type { NodeResources } from './node-state';
import { Placement } from './placement';
import { requestOf, type Request } from './request';
import type { Allocation } from './running-ends';
import { byPriority, insertByPriority, type Entry, type Shape } from './shapes';
import { slotOf, type Hold } from './slots';
import { StartDeadlines } from './start-deadlines';
import type { ShapeWait } from './wait-reports';
import { Waits } from './waits';

export type { NodeResources } from './node-state';

const ME = COMPONENTS.agentScheduler;

/**
 * Owns AGENT_SCHEDULING: places each rank of a task on a node (cores, whole or shared GPUs,
 * memory), honouring `gpuIndices`, `colocate` and `exclusive` tags.
 *
 * Order: higher priority first, then submission order (`seq`, numbered by the client across
 * bulks and calls; a record without one counts as submitted right after the latest seen, so
 * such records keep their arrival order), then arrival. When the first task in that order (the
 * head) does not fit, later tasks that fit may start ahead of it until nodes are reserved for it
 * (Backfill, backfill.ts). Ranks of a colocated task all go on one node; those of an exclusive
 * task may share a node.
 *
 * The core holds the waiting tasks (in shapes: the capacity they ask, each in order) and the
 * running ones, and decides in its synchronous handlers; its parts are pure too: Placement
 * (nodes indexed by free capacity, and who owns what), ShapeBlocking (which shapes a round
 * tries), Backfill, PilotFit (E_NEVER_FITS), DrainPoint, FollowOns, StartDeadlines and Waits
 * (waiting reasons and estimated starts), each in its own file.
 */
export class AgentSchedulerCore {
  private readonly placement: Placement;
  private readonly blocking: ShapeBlocking;
  private readonly backfill: Backfill;
  private readonly fit: PilotFit;
  private readonly shapes = new Map<string, Shape>();
  private readonly waitingIn = new Map<string, Shape>();
  private readonly allocated = new Map<string, Allocation>();
  private readonly canceled = new CancelSet();
  private arrivals = 0;
  /** The highest submission number seen: the place of a record that has none. */
  private lastSeq = -1;
  /** Set when blocked shapes were released, so scheduling goes round once more. */
  private again = false;
  /** Services whose ready attempt ended here: what they let go does not start (dead-services.ts). */
  private readonly dead = new DeadServices();
  /** When the pilot drains, and the tasks stranded by it (drain-point.ts). */
  private readonly drainPoint = new DrainPoint();
  /** When each waiting task with walltimeS becomes too late to start here. */
  private readonly deadlines: StartDeadlines;
  /** Why tasks wait and when they may start, reported when the effects take it (waits.ts). */
  private readonly waits: Waits | undefined;
  /** Slots of running short tasks that waiting ones of the same shape queue on (follow-ons.ts). */
  private readonly followOns: FollowOns | undefined;
  /** Launchers in use, when the pilot caps them (agent.launchers; launchers.ts). */
  private readonly launchers: Launchers | undefined;

  constructor(
    private readonly effects: AgentSchedulerEffects,
    private readonly clock: Clock,
    nodes: readonly NodeResources[],
    /** The agent's node by name (default: the first). */
    homeName?: string,
    /** Most plain function calls queued in one worker (LANE_DEPTH; 1: a core per call). */
    laneDepth?: number,
    /**
     * How many later tasks may start ahead of the head that does not fit before nodes are
     * reserved for it (default: the cores of the largest node; 0: at once).
     */
    backfillLimit?: number,
    /** Whether short tasks may queue on running ones' slots (its executor starts them so). */
    followOns = false,
    /** At most `max` tasks that need a launcher run at once; more wait, holding no slots. */
    launchers?: LauncherLimit,
  ) {
    this.followOns = followOns ? new FollowOns() : undefined;
    this.launchers = launchers !== undefined ? new Launchers(launchers) : undefined;
    this.deadlines = new StartDeadlines(clock, (ts) => this.onLate(ts));
    this.placement = new Placement(nodes, this.waitingIn, homeName, laneDepth);
    this.blocking = new ShapeBlocking(this.placement);
    const limit = backfillLimit ?? Math.max(0, ...nodes.map((n) => n.cores));
    this.backfill = new Backfill(limit, this.placement, this.shapes, this.waitingIn, () => {
      this.blocking.unblockAll();
      this.again = true;
    });
    this.fit = new PilotFit(nodes, this.placement.home?.spec);
    if (effects.reportWaits !== undefined) {
      const report = (ws: ShapeWait[]) => effects.reportWaits?.(ws);
      const { shapes, allocated, placement, drainPoint, launchers: l } = this;
      this.waits = new Waits(clock, report, shapes, allocated, placement, drainPoint, limit, l);
    }
  }

  onTasks(tasks: TaskRecord[]): void {
    checkArrivals(tasks, 'AGENT_SCHEDULING_PENDING', 'AGENT_SCHEDULING', ME);
    const now = this.clock.now();
    const notes: Notification[] = [];
    for (const task of tasks) {
      if (task.seq !== undefined && task.seq > this.lastSeq) this.lastSeq = task.seq;
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      notes.push(transition(task, 'AGENT_SCHEDULING', ME, now));
      if (this.dead.size > 0 && this.withdrawn(task, now, notes)) continue;
      const req = requestOf(task.description);
      const why = 'error' in req ? reason('E_BAD_REQUEST', req.error, ME) : this.fit.neverFits(req);
      if (why !== undefined) {
        task.reason = why;
        notes.push(transition(task, 'FAILED', ME, now, { reason: why }));
        continue;
      }
      this.enqueue(task, req as Request);
    }
    this.schedule(now, notes);
  }

  /** Slots come back from the Executor once a task has left AGENT_EXECUTING: exactly once. */
  onReleased(released: Released[]): void {
    const now = this.clock.now();
    const notes: Notification[] = [];
    for (const r of released) if (r.service !== undefined) this.dead.record(r.uid, r.service);
    // before their slots are offered: the tasks a service's ready let go wait for no dead endpoint
    if (released.some((r) => r.service !== undefined)) this.withdrawAll(now, notes);
    for (const { uid } of released) {
      const a = this.allocated.get(uid);
      if (a === undefined) continue;
      this.allocated.delete(uid);
      this.waits?.ended(a);
      if (this.launchers?.release(uid) === true) this.blocking.unblockLaunchers();
      if (this.followOns?.released(uid, now) === 'kept') {
        // a follower holds them now, and its chain has room for one more of the shape
        const shape = this.shapes.get(a.req.key);
        if (shape?.blocked === true) this.blocking.unblock(shape);
        continue;
      }
      const touched = this.placement.giveBack(a);
      const tag = a.req.colocate;
      if (tag !== undefined && this.placement.uncolocate(tag, a.holds.length)) {
        this.blocking.unblockGroup(tag);
        this.backfill.ungrouped(tag);
      }
      this.waits?.released(a.req, uid);
      for (const n of touched) {
        this.placement.refile(n);
        this.blocking.unblockFor(n);
      }
    }
    this.schedule(now, notes);
  }

  /** A restarted agent's tasks that were executing (its journal's): their slots are taken again. */
  adopt(tasks: readonly TaskRecord[]): void {
    for (const [uid, a] of this.placement.takeOver(tasks)) this.allocated.set(uid, a);
  }

  /**
   * A service's ready attempt stopped serving, as the client heard it (it may have run on
   * another pilot): what it let go that waits here is withdrawn.
   */
  onServiceGone(uid: string, end: ServiceEnd): void {
    const now = this.clock.now();
    const notes: Notification[] = [];
    this.dead.record(uid, end);
    this.withdrawAll(now, notes);
    this.schedule(now, notes);
  }

  /** Waiting tasks let go by a service attempt that has ended: withdrawn (dead-services.ts). */
  private withdrawAll(now: number, notes: Notification[]): void {
    const waiting = [...this.waitingIn.keys()];
    for (const uid of waiting) {
      const shape = this.waitingIn.get(uid)!;
      const i = shape.queue.findIndex((e, k) => k >= shape.head && e.task.uid === uid);
      if (this.dead.verdictOf(shape.queue[i]!.task) === undefined) continue;
      this.withdrawn(this.unqueue(shape, i), now, notes);
    }
  }

  /** Goes back to the client or ends CANCELED if a dead service's ready let it go; else false. */
  private withdrawn(task: TaskRecord, now: number, notes: Notification[]): boolean {
    const v = this.dead.verdictOf(task);
    if (v === undefined) return false;
    if (v.to === 'back' && this.effects.returnTasks !== undefined) {
      this.effects.returnTasks([task], v.why);
    } else {
      task.reason = v.why;
      notes.push(transition(task, 'CANCELED', ME, now, { reason: v.why }));
    }
    return true;
  }

  /** The pilot drains at `at` (clock ms): a task that declares walltimeS starts only if it can end by then. */
  setDrainPoint(at: number): void {
    this.drainPoint.at = at;
    this.deadlines.setDrainPoint(at);
    for (const shape of this.shapes.values()) {
      for (const e of shape.queue.slice(shape.head)) this.deadlines.add(e.task);
    }
  }

  /** Waiting tasks whose latest start passed: those still waiting never start here. */
  private onLate(tasks: TaskRecord[]): void {
    for (const task of tasks) {
      const shape = this.waitingIn.get(task.uid);
      if (shape === undefined || this.drainPoint.passed) continue;
      const i = shape.queue.findIndex((e, k) => k >= shape.head && e.task === task);
      if (i < 0) continue; // another attempt of it waits: it has a deadline of its own
      this.unqueue(shape, i);
      this.drainPoint.strand(task);
    }
    this.schedule(this.clock.now(), []);
  }

  /** The drain point has come: no task starts from now on (those waiting go back at the end). */
  onDrain(): void {
    this.drainPoint.passed = true;
  }

  onCancel(uids: string[]): void {
    this.canceled.add(uids);
    const now = this.clock.now();
    const notes: Notification[] = [];
    for (const uid of uids) {
      const lost = this.drainPoint.take(uid);
      if (lost !== undefined) {
        notes.push(transition(lost, 'CANCELED', ME, now, { reason: canceledBy(ME) }));
        continue;
      }
      const shape = this.waitingIn.get(uid);
      if (shape === undefined) continue;
      const i = shape.queue.findIndex((e, k) => k >= shape.head && e.task.uid === uid);
      const task = this.unqueue(shape, i);
      notes.push(transition(task, 'CANCELED', ME, now, { reason: canceledBy(ME) }));
    }
    this.schedule(now, notes);
  }

  /** Takes the waiting task at `i` out of the shape's queue. */
  private unqueue(shape: Shape, i: number): TaskRecord {
    const [entry] = shape.queue.splice(i, 1);
    const uid = entry!.task.uid;
    this.waitingIn.delete(uid);
    this.deadlines.left(entry!.task);
    if (shape.head >= shape.queue.length) this.forgetShape(shape);
    else if (i === shape.head) this.waits?.blocked(shape.req.key); // another task is first
    this.backfill.left(uid, entry!);
    return entry!.task;
  }

  /**
   * The agent is going away: every waiting task ends with `final`; with `leaveToClient` (the
   * pilot's time is up) they are left to the client instead, which starts them elsewhere.
   */
  onShutdown(final: AbortedTaskState, why: Reason, leaveToClient = false): void {
    const now = this.clock.now();
    const notes: Notification[] = [];
    const waiting = this.drainPoint.takeAll();
    for (const shape of this.shapes.values()) {
      for (let i = shape.head; i < shape.queue.length; i++) waiting.push(shape.queue[i]!.task);
    }
    this.deadlines.stop();
    for (const t of leaveToClient ? [] : waiting) {
      t.reason = why;
      notes.push(transition(t, final, ME, now, { reason: why }));
    }
    this.shapes.clear();
    this.blocking.clear();
    this.waitingIn.clear();
    this.waits?.stop();
    this.backfill.drop();
    if (notes.length > 0) this.effects.notify(notes);
  }

  /** The client resumed: it knows no reason, so every one is sent again. */
  onWaitsResend(): void {
    this.waits?.resend();
  }

  /** Tasks waiting for slots, or that can no longer start here. */
  get queued(): number {
    return this.waitingIn.size + this.drainPoint.size;
  }

  /** Free capacity per node (for tests and status). */
  freeCapacity(): ReturnType<Placement['freeCapacity']> {
    return this.placement.freeCapacity();
  }

  /** The task nodes are held for, if any. */
  get reservedFor(): string | undefined {
    return this.placement.reservedFor;
  }

  private enqueue(task: TaskRecord, req: Request): void {
    let shape = this.shapes.get(req.key);
    if (shape === undefined) {
      shape = { req, queue: [], head: 0, blocked: false };
      this.shapes.set(req.key, shape);
      this.blocking.added(shape);
    }
    const e: Entry = { task, submitted: task.seq ?? this.lastSeq, arrival: this.arrivals++ };
    // in order of submission; a task staged late (or sent again) goes before later ones
    const q = shape.queue;
    let i = q.length;
    while (i > shape.head && q[i - 1]!.submitted > e.submitted) i--;
    if (i === q.length) q.push(e);
    else q.splice(i, 0, e);
    // a new first task has a new reason; one behind it moves only the estimated starts
    if (i === shape.head && shape.blocked) this.waits?.blocked(req.key);
    else this.waits?.joined();
    this.waitingIn.set(task.uid, shape);
    this.deadlines.add(task);
  }

  /** Starts what fits, in priority order, and keeps the reservation for the head current. */
  private schedule(now: number, notes: Notification[]): void {
    const out: TaskRecord[] = [];
    if (this.drainPoint.passed) {
      if (notes.length > 0) this.effects.notify(notes);
      return;
    }
    // Each round starts what fits; it repeats only when nodes came back into use (a
    // reservation moved or ended), which happens at most once per started or waiting task.
    // Such a round ends at once, so that the nodes freed are offered in order too.
    do {
      this.again = false;
      const ready = this.blocking.readyInOrder();
      // Tasks are tried one at a time in the global order (priority, then arrival): always from
      // the ready shape whose first task comes first, so a shape cannot run ahead of an older one.
      while (ready.length > 0 && !this.again) {
        const shape = ready.shift()!;
        this.drain(shape, ready[0], now, notes, out);
        // The first blocked task may be the new head: reserve for it before anything behind it
        // is tried, so no task behind the head starts on the nodes it is owed.
        if (shape.blocked) this.backfill.blocked(shape);
        else if (shape.head < shape.queue.length) insertByPriority(ready, shape);
      }
      if (!this.again) this.backfill.update();
    } while (this.again);
    if (notes.length > 0) this.effects.notify(notes);
    if (out.length > 0) this.effects.forward(out);
    this.drainPoint.handBack(now, this.effects);
  }

  /** Starts the shape's tasks until one does not fit, or `next`'s first task comes first. */
  private drain(
    shape: Shape,
    next: Shape | undefined,
    now: number,
    notes: Notification[],
    out: TaskRecord[],
  ): void {
    while (shape.head < shape.queue.length) {
      if (this.again || (next !== undefined && byPriority(shape, next) > 0)) return;
      const { task } = shape.queue[shape.head]!;
      if (this.drainPoint.tooLate(task, now)) {
        this.strand(shape, task);
        continue;
      }
      const mayFollow = this.followOns !== undefined && followable(task, shape.req);
      let holds = this.placement.place(task.uid, shape.req);
      if (holds !== undefined && !this.admitted(task, shape, holds)) return;
      if (holds !== undefined && mayFollow && holds[0]!.node === this.placement.home) {
        this.followOns?.placed(task.uid, shape.req.key, holds, now);
      } else if (holds === undefined) {
        const f =
          mayFollow && this.alone(shape, task.uid)
            ? this.followOns?.follow(task.uid, shape.req.key, now)
            : undefined;
        if (f === undefined) {
          this.blocking.block(shape);
          this.waits?.blocked(shape.req.key);
          return;
        }
        holds = f.holds;
        task.follows = f.follows;
        task.slots = holds.map(slotOf);
      }
      shape.queue[shape.head++] = undefined as never; // let the record go
      this.waitingIn.delete(task.uid);
      this.deadlines.left(task);
      const a: Allocation = { req: shape.req, holds };
      this.allocated.set(task.uid, a);
      this.waits?.started(task, a, now);
      notes.push(transition(task, 'AGENT_EXECUTING_PENDING', ME, now));
      out.push(task);
      this.backfill.started(task.uid, shape);
    }
    this.forgetShape(shape);
  }

  /**
   * Whether the placed task may start: one that needs a launcher (judged on its slots, which it
   * keeps) waits while all are in use, its placement taken back, its shape blocked until one
   * comes back. (A follower is forked on the agent's node: it needs none.)
   */
  private admitted(task: TaskRecord, shape: Shape, holds: Hold[]): boolean {
    task.slots = holds.map(slotOf);
    if (this.launchers === undefined || this.launchers.admit(task)) return true;
    delete task.slots;
    this.placement.unplace(shape.req, holds);
    this.blocking.waitForLauncher(shape);
    this.waits?.blocked(shape.req.key);
    return false;
  }

  /** Takes the shape's first task out of the queue for good: it never starts here. */
  private strand(shape: Shape, task: TaskRecord): void {
    shape.queue[shape.head++] = undefined as never;
    this.waitingIn.delete(task.uid);
    this.deadlines.left(task);
    this.drainPoint.strand(task);
    this.backfill.stranded(task.uid);
  }

  /**
   * Whether `shape` holds every waiting task and no nodes are held for another one: then a
   * follower (its first task, `uid`) passes no one.
   */
  private alone(shape: Shape, uid: string): boolean {
    const reserved = this.placement.reservedFor;
    return (
      (reserved === undefined || reserved === uid) &&
      this.waitingIn.size === shape.queue.length - shape.head
    );
  }

  private forgetShape(shape: Shape): void {
    this.shapes.delete(shape.req.key);
    this.waits?.gone(shape.req.key);
    this.blocking.forget(shape);
  }
}
