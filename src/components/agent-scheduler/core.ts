import type { Reason, TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { Notification } from '../../states/notification';
import { COMPONENTS, type AbortedTaskState } from '../../states/task-model';
import { cancelIfAsked, canceledBy } from '../shared/canceled';
import { CancelSet, reason } from '../shared/reasons';
import { checkArrivals, transition } from '../shared/transition';
import type { AgentSchedulerEffects } from './effects';
import { NodeIndex } from './node-index';
import { NodeState, type NodeResources } from './node-state';
import {
  describeRequest,
  rankFitsFree,
  rankFitsSize,
  ranksFitFree,
  ranksPerEmptyNode,
  requestOf,
  type Request,
} from './request';
import { FollowOns } from './follow-ons';
import {
  BEYOND_PLAN,
  estimatesByShape,
  holdMsOf,
  planTask,
  type ShapeEstimates,
} from './estimates';
import { byPriority, firstWaiting, insertByPriority, type Entry, type Shape } from './shapes';
import { RunningEnds, type Allocation } from './running-ends';
import { StartDeadlines } from './start-deadlines';
import { PLANNED_TASKS, planStarts } from './start-plan';
import { giveBack, slotOf, takeRank, type Hold } from './slots';
import { heldNodes, TagHolders, waitReasonOf, type WaitView } from './wait-reasons';
import { WaitReports, type ShapeWait, type ShapeWaitOf } from './wait-reports';

export type { NodeResources } from './node-state';

const ME = COMPONENTS.agentScheduler;

/**
 * Owns AGENT_SCHEDULING: places each rank of a task on a node (cores, whole or shared GPUs,
 * memory), honouring `gpuIndices`, `colocate` and `exclusive` tags.
 *
 * Order: higher priority first, then submission order (`seq`, numbered by the client across
 * bulks and calls; a record without one counts as submitted right after the latest seen, so
 * such records keep their arrival order), then arrival. Backfill without starvation: when the
 * first task in that order (the head) does not fit, later tasks that fit may start ahead of it
 * (durations are unknown, so a reservation at once would idle the cores the head cannot use
 * yet); once `backfillLimit` of them have, nodes that can hold it are reserved for it (the ones
 * with the most free capacity), and other tasks start ahead of it only on nodes that are not
 * reserved. Reserved nodes only drain, so the head starts at the latest when the tasks
 * running there end. Only a task before it in the order (higher priority, or of equal priority
 * submitted earlier and staged late) can take the head's place. While the head waits to open
 * its colocate group, no other task opens that group (elsewhere).
 * Ranks of a colocated task all go on one node; those of an exclusive task may share a node.
 *
 * Speed: open nodes are indexed by free capacity (NodeIndex), so a placement never scans every
 * node; waiting tasks are grouped by the capacity they ask (shapes), and a release re-tries only
 * the shapes that can use the node that got capacity back.
 */
export class AgentSchedulerCore {
  private readonly nodes: NodeState[];
  private readonly index: NodeIndex;
  /** Open nodes with nothing placed on them (exclusive tasks need one). */
  private readonly empty = new Set<NodeState>();
  private readonly exclusive = new Map<string, Set<NodeState>>();
  private readonly colocated = new Map<string, { node: NodeState; ranks: number }>();
  private readonly sizes: { spec: NodeResources; count: number }[] = [];
  private readonly shapes = new Map<string, Shape>();
  /** Shapes whose first task may fit: the only ones a scheduling round tries. */
  private readonly ready = new Set<Shape>();
  /** Blocked shapes, by the node a bound colocate group waits on (else under `undefined`). */
  private readonly blockedOn = new Map<NodeState | undefined, Set<Shape>>();
  private readonly waitingIn = new Map<string, Shape>();
  private readonly allocated = new Map<string, Allocation>();
  /** Running tasks by expected end, for estimated starts (kept while reasons are reported). */
  private readonly ends = new RunningEnds();
  private readonly canceled = new CancelSet();
  private reservation: { uid: string; nodes: NodeState[] } | undefined;
  /** The head, while it does not fit and later tasks may still pass it (see backfillLimit). */
  private passable: { shape: Shape; entry: Entry } | undefined;
  private readonly backfillLimit: number;
  private arrivals = 0;
  /** The highest submission number seen: the place of a record that has none. */
  private lastSeq = -1;
  /** Set when blocked shapes were released, so scheduling goes round once more. */
  private again = false;
  /** When the pilot drains (clock ms): a task that declares walltimeS must end by then. */
  private drainsAt: number | undefined;
  /** Past the drain point: no task starts any more. */
  private drained = false;
  /**
   * Tasks that can no longer end here before the drain point: they never start here. They are
   * given back to the client (`returnTasks`) and kept until the end, in case that was lost.
   */
  private readonly stranded = new Map<string, TaskRecord>();
  /** Stranded since the last hand-back to the client. */
  private returning: TaskRecord[] = [];
  /** When each waiting task with walltimeS becomes too late to start here. */
  private readonly deadlines: StartDeadlines;

  /** The agent's own node, where tasks that must run there go (Request.home). */
  private readonly home: NodeState | undefined;
  /** Why tasks wait, reported when the effects take it (wait-reports.ts). */
  private readonly waits: WaitReports | undefined;
  /** Estimated starts by shape, from the plan made for the report being computed. */
  private estimates = new Map<string, ShapeEstimates>();
  /** Running tasks per tag, which reasons name (kept only while reasons are reported). */
  private readonly tagRuns = new TagHolders();
  /** Slots of running short tasks that waiting ones of the same shape queue on (follow-ons.ts). */
  private readonly followOns: FollowOns | undefined;

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
  ) {
    this.followOns = followOns ? new FollowOns() : undefined;
    this.deadlines = new StartDeadlines(clock, (ts) => this.onLate(ts));
    this.backfillLimit = backfillLimit ?? Math.max(0, ...nodes.map((n) => n.cores));
    this.nodes = nodes.map((spec, i) => new NodeState(i, spec));
    this.home = this.nodes.find((n) => n.spec.name === homeName) ?? this.nodes[0];
    if (this.home !== undefined && laneDepth !== undefined) this.home.laneDepth = laneDepth;
    this.index = new NodeIndex(
      Math.max(0, ...nodes.map((n) => n.cores)),
      Math.max(0, ...nodes.map((n) => n.gpus)),
    );
    for (const n of this.nodes) this.refile(n);
    const bySize = new Map<string, { spec: NodeResources; count: number }>();
    for (const spec of nodes) {
      const k = `${spec.cores}/${spec.gpus}/${spec.memMb}`;
      const e = bySize.get(k) ?? { spec, count: 0 };
      e.count++;
      bySize.set(k, e);
    }
    this.sizes.push(...bySize.values());
    if (effects.reportWaits !== undefined) {
      const report = (ws: ShapeWait[]) => effects.reportWaits?.(ws);
      this.waits = new WaitReports(clock, this.waitOf, report, () => this.plan());
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
      const req = requestOf(task.description);
      const why = 'error' in req ? reason('E_BAD_REQUEST', req.error, ME) : this.neverFits(req);
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
  onReleased(released: { uid: string }[]): void {
    const now = this.clock.now();
    for (const { uid } of released) {
      const a = this.allocated.get(uid);
      if (a === undefined) continue;
      this.allocated.delete(uid);
      this.ends.ended(a);
      if (this.followOns?.released(uid, now) === 'kept') {
        // a follower holds them now, and its chain has room for one more of the shape
        const shape = this.shapes.get(a.req.key);
        if (shape?.blocked === true) this.unblock(shape);
        continue;
      }
      const touched = new Set<NodeState>();
      for (const h of a.holds) {
        giveBack(h);
        touched.add(h.node);
        if (a.req.exclusive !== undefined && --h.node.exclusiveSlots === 0) {
          h.node.exclusiveTag = undefined;
          this.exclusive.get(a.req.exclusive)?.delete(h.node);
        }
      }
      if (a.req.colocate !== undefined) this.uncolocate(a.req.colocate, a.holds.length);
      if (this.waits !== undefined) this.tagRuns.ended(a.req, uid);
      this.waits?.capacityMoved();
      for (const n of touched) {
        this.refile(n);
        this.unblockFor(n);
      }
    }
    this.schedule(now, []);
  }

  /** The pilot drains at `at` (clock ms): a task that declares walltimeS starts only if it can end by then. */
  setDrainPoint(at: number): void {
    this.drainsAt = at;
    this.deadlines.setDrainPoint(at);
    for (const shape of this.shapes.values()) {
      for (const e of shape.queue.slice(shape.head)) this.deadlines.add(e.task);
    }
  }

  /** Waiting tasks whose latest start passed: those still waiting never start here. */
  private onLate(tasks: TaskRecord[]): void {
    for (const task of tasks) {
      const shape = this.waitingIn.get(task.uid);
      if (shape === undefined || this.drained) continue;
      const i = shape.queue.findIndex((e, k) => k >= shape.head && e.task === task);
      if (i < 0) continue; // another attempt of it waits: it has a deadline of its own
      this.unqueue(shape, i);
      this.stranded.set(task.uid, task);
      this.returning.push(task);
    }
    this.schedule(this.clock.now(), []);
  }

  /** The drain point has come: no task starts from now on (those waiting go back at the end). */
  onDrain(): void {
    this.drained = true;
  }

  onCancel(uids: string[]): void {
    this.canceled.add(uids);
    const now = this.clock.now();
    const notes: Notification[] = [];
    for (const uid of uids) {
      const lost = this.stranded.get(uid);
      if (lost !== undefined) {
        this.stranded.delete(uid);
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
    if (this.reservation?.uid === uid) this.dropReservation();
    if (this.passable?.entry === entry) this.passable = undefined;
    return entry!.task;
  }

  /**
   * The agent is going away: every waiting task ends with `final`; with `leaveToClient` (the
   * pilot's time is up) they are left to the client instead, which starts them elsewhere.
   */
  onShutdown(final: AbortedTaskState, why: Reason, leaveToClient = false): void {
    const now = this.clock.now();
    const notes: Notification[] = [];
    const waiting: TaskRecord[] = [...this.stranded.values()];
    for (const shape of this.shapes.values()) {
      for (let i = shape.head; i < shape.queue.length; i++) waiting.push(shape.queue[i]!.task);
    }
    this.stranded.clear();
    this.returning = [];
    this.deadlines.stop();
    for (const t of leaveToClient ? [] : waiting) {
      t.reason = why;
      notes.push(transition(t, final, ME, now, { reason: why }));
    }
    this.shapes.clear();
    this.ready.clear();
    this.blockedOn.clear();
    this.waitingIn.clear();
    this.waits?.stop();
    if (this.reservation !== undefined) this.dropReservation();
    if (notes.length > 0) this.effects.notify(notes);
  }

  /** The client resumed: it knows no reason, so every one is sent again. */
  onWaitsResend(): void {
    this.waits?.resend(this.shapes.keys());
  }

  /** What a waiting shape's first task waits for, computed when reasons are reported. */
  private readonly waitOf: ShapeWaitOf = (key) => {
    const shape = this.shapes.get(key);
    const e = shape?.blocked === true ? shape.queue[shape.head] : undefined;
    if (e === undefined) return undefined;
    const { uid, attempt } = e.task;
    const reason = waitReasonOf(uid, shape!.req, this.waitView, this.clock.now());
    const est = this.estimates.get(key) ?? { starts: [], noEstimate: BEYOND_PLAN };
    return { task: uid, attempt, reason, ...est };
  };

  /** Plays the queue forward for the estimated starts the next report carries (start-plan.ts). */
  private plan(): void {
    if (this.drained) {
      const noEstimate = 'no estimate: the pilot is past its drain point, where no task starts';
      this.estimates = new Map([...this.shapes.keys()].map((k) => [k, { starts: [], noEstimate }]));
      return;
    }
    const waiting = firstWaiting(this.shapes.values(), PLANNED_TASKS);
    const plan = planStarts({
      now: this.clock.now(),
      waiting: waiting.map(([e, s]) => planTask(e.task, s.req)),
      ends: this.ends.inOrder(),
      open: () => this.index.mostFree(),
      home: this.home,
      drainsAt: this.drainsAt,
      backfillLimit: this.backfillLimit,
      reservedFor: this.reservation?.uid,
    });
    this.estimates = estimatesByShape(waiting, plan);
  }

  /** What a reason reads of this scheduler (wait-reasons.ts). */
  private readonly waitView: WaitView = {
    held: () => heldNodes(this.reservation?.nodes, this.exclusive.values()),
    open: () => this.index.mostFree(),
    home: () => this.home,
    colocatedOn: (tag) => this.colocated.get(tag)?.node,
    opensGroupFirst: (uid, tag) =>
      this.opensHeadGroup(uid, tag) ? this.reservation?.uid : undefined,
    holders: (kind, tag) => this.tagRuns[kind].first(tag),
  };

  /** Tasks waiting for slots, or that can no longer start here. */
  get queued(): number {
    return this.waitingIn.size + this.stranded.size;
  }

  /** Free capacity per node (for tests and status). */
  freeCapacity(): { node: string; cores: number; gpuFree: number[]; memMb: number }[] {
    return this.nodes.map((n) => ({
      node: n.name,
      cores: n.freeCores.length,
      gpuFree: [...n.gpuFree],
      memMb: n.memFree,
    }));
  }

  /** The task nodes are held for, if any. */
  get reservedFor(): string | undefined {
    return this.reservation?.uid;
  }

  private neverFits(r: Request): Reason | undefined {
    // the nodes never change: a request that fits once always does (a bulk asks it per task)
    if (this.fitting.has(r.key)) return undefined;
    const why = r.home ? this.neverFitsHome(r) : this.neverFitsAnywhere(r);
    if (why === undefined) this.fitting.add(r.key);
    return why;
  }

  /** Keys of requests found to fit the pilot. */
  private readonly fitting = new Set<string>();

  private neverFitsAnywhere(r: Request): Reason | undefined {
    const fits =
      r.ranks === 1 || r.colocate !== undefined
        ? this.sizes.some((s) => ranksPerEmptyNode(r, s.spec) >= r.ranks)
        : this.sizes.reduce((k, s) => k + s.count * ranksPerEmptyNode(r, s.spec), 0) >= r.ranks;
    if (fits) return undefined;
    const has = this.sizes
      .map(
        (s) =>
          `${s.count} node(s) with ${s.spec.cores} cores, ${s.spec.gpus} GPUs, ${s.spec.memMb} MiB`,
      )
      .join('; ');
    const where = r.ranks > 1 && r.colocate !== undefined ? ' on one node (colocate)' : '';
    return reason(
      'E_NEVER_FITS',
      `task asks ${describeRequest(r)} per rank${where}; the pilot has ${has}, so it can never run`,
      ME,
      {
        asked: { ...r, key: undefined },
        pilot: this.sizes.map((s) => ({ ...s.spec, count: s.count })),
      },
    );
  }

  /** A task of the agent's node alone: that node, empty, must hold its ranks. */
  private neverFitsHome(r: Request): Reason | undefined {
    const h = this.home?.spec;
    if (h !== undefined && ranksPerEmptyNode(r, h) >= r.ranks) return undefined;
    const has = h === undefined ? 'no node' : `${h.cores} cores, ${h.gpus} GPUs, ${h.memMb} MiB`;
    return reason(
      'E_NEVER_FITS',
      `task asks ${describeRequest(r)} per rank on the agent's node${h === undefined ? '' : ` '${h.name}'`} (a function task runs in its workers); that node has ${has}, so it can never run`,
      ME,
      { asked: { ...r, key: undefined }, node: h },
    );
  }

  private enqueue(task: TaskRecord, req: Request): void {
    let shape = this.shapes.get(req.key);
    if (shape === undefined) {
      shape = { req, queue: [], head: 0, blocked: false };
      this.shapes.set(req.key, shape);
      this.ready.add(shape);
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
    if (this.drained) {
      if (notes.length > 0) this.effects.notify(notes);
      return;
    }
    // Each round starts what fits; it repeats only when nodes came back into use (a
    // reservation moved or ended), which happens at most once per started or waiting task.
    // Such a round ends at once, so that the nodes freed are offered in order too.
    do {
      this.again = false;
      const ready = [...this.ready].sort(byPriority);
      // Tasks are tried one at a time in the global order (priority, then arrival): always from
      // the ready shape whose first task comes first, so a shape cannot run ahead of an older one.
      while (ready.length > 0 && !this.again) {
        const shape = ready.shift()!;
        this.drain(shape, ready[0], now, notes, out);
        // The first blocked task may be the new head: reserve for it before anything behind it
        // is tried, so no task behind the head starts on the nodes it is owed.
        if (shape.blocked) this.reserveIfHead(shape);
        else if (shape.head < shape.queue.length) insertByPriority(ready, shape);
      }
      if (!this.again) this.updateReservation();
    } while (this.again);
    if (notes.length > 0) this.effects.notify(notes);
    if (out.length > 0) this.effects.forward(out);
    if (this.returning.length > 0) this.giveBackStranded(now);
  }

  /** Hands the tasks stranded since the last time back to the client, to start elsewhere. */
  private giveBackStranded(now: number): void {
    const tasks = this.returning;
    this.returning = [];
    if (this.effects.returnTasks === undefined) return;
    const left = Math.max(0, Math.round(((this.drainsAt ?? now) - now) / 1000));
    const why = reason(
      'E_PILOT_DRAINS',
      `the pilot drains in ${left} s, before the walltimeS of these tasks would end: they go back to start on another pilot (no retry used)`,
      ME,
      { drainsInS: left },
    );
    this.effects.returnTasks(tasks, why);
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
      if (this.tooLate(task, now)) {
        this.strand(shape, task);
        continue;
      }
      const followable = this.followOns !== undefined && this.followable(task, shape.req);
      let holds = this.place(task.uid, shape.req);
      if (holds !== undefined && followable && holds[0]!.node === this.home) {
        this.followOns?.placed(task.uid, shape.req.key, holds, now);
      } else if (holds === undefined) {
        const f =
          followable && this.alone(shape, task.uid)
            ? this.followOns?.follow(task.uid, shape.req.key, now)
            : undefined;
        if (f === undefined) {
          this.block(shape);
          return;
        }
        holds = f.holds;
        task.follows = f.follows;
      }
      shape.queue[shape.head++] = undefined as never; // let the record go
      this.waitingIn.delete(task.uid);
      this.deadlines.left(task);
      const a: Allocation = { req: shape.req, holds };
      this.allocated.set(task.uid, a);
      if (this.waits !== undefined) this.trackEnd(task, a, now);
      task.slots = holds.map(slotOf);
      notes.push(transition(task, 'AGENT_EXECUTING_PENDING', ME, now));
      out.push(task);
      if (this.reservation?.uid === task.uid) this.dropReservation();
      else if (this.passable !== undefined) this.passedBy(shape);
      if (this.waits !== undefined) {
        this.waits.capacityMoved();
        this.tagRuns.started(shape.req, task.uid);
      }
    }
    this.forgetShape(shape);
  }

  /**
   * Notes when a task that starts now is expected to end, for estimated starts: a follower ends
   * its hold after the one it follows, whose slots it takes over.
   */
  private trackEnd(task: TaskRecord, a: Allocation, now: number): void {
    const hold = holdMsOf(task.description);
    const leader = task.follows !== undefined ? this.allocated.get(task.follows) : undefined;
    if (leader !== undefined) leader.handedOn = true;
    const from = task.follows !== undefined ? leader?.endsAt : now;
    if (hold !== undefined && from !== undefined) a.endsAt = from + hold;
    this.ends.started(a);
  }

  /** Whether the task declares a walltimeS that would take it past the drain point. */
  private tooLate(task: TaskRecord, now: number): boolean {
    const w = task.description.walltimeS;
    return w !== undefined && this.drainsAt !== undefined && now + w * 1000 > this.drainsAt;
  }

  /** Takes the shape's first task out of the queue for good: it never starts here. */
  private strand(shape: Shape, task: TaskRecord): void {
    shape.queue[shape.head++] = undefined as never;
    this.waitingIn.delete(task.uid);
    this.deadlines.left(task);
    this.stranded.set(task.uid, task);
    this.returning.push(task);
    if (this.reservation?.uid === task.uid) this.dropReservation();
    if (this.passable?.entry.task.uid === task.uid) this.passable = undefined;
  }

  /**
   * Whether a task may be followed, or follow (follow-ons.ts): one process of an executable
   * forked on the agent's node, with no tag that ties it to others.
   */
  private followable(task: TaskRecord, r: Request): boolean {
    const d = task.description;
    return (
      r.ranks === 1 &&
      !r.lane &&
      !r.home &&
      r.colocate === undefined &&
      r.exclusive === undefined &&
      (d.mode ?? 'executable') === 'executable' &&
      (d.launch ?? 'fork') === 'fork'
    );
  }

  /**
   * Whether `shape` holds every waiting task and no nodes are held for another one: then a
   * follower (its first task, `uid`) passes no one.
   */
  private alone(shape: Shape, uid: string): boolean {
    const reserved = this.reservation?.uid;
    return (
      (reserved === undefined || reserved === uid) &&
      this.waitingIn.size === shape.queue.length - shape.head
    );
  }

  /** Places every rank of a request, or nothing. */
  private place(uid: string, r: Request): Hold[] | undefined {
    const holds: Hold[] = [];
    for (let i = 0; i < r.ranks; i++) {
      // A colocated task's first rank went to a node that holds all its ranks.
      const n = r.colocate !== undefined && i > 0 ? holds[0]!.node : this.candidate(uid, r, holds);
      if (n === undefined) {
        for (const h of holds) giveBack(h);
        for (const h of holds) this.refile(h.node);
        return undefined;
      }
      holds.push(takeRank(n, r));
      this.refile(n);
    }
    if (r.exclusive !== undefined) {
      let owned = this.exclusive.get(r.exclusive);
      if (owned === undefined) this.exclusive.set(r.exclusive, (owned = new Set()));
      for (const h of holds) {
        h.node.exclusiveTag = r.exclusive;
        h.node.exclusiveSlots++;
        owned.add(h.node);
        this.refile(h.node);
      }
    }
    if (r.colocate !== undefined) {
      const c = this.colocated.get(r.colocate);
      if (c === undefined) this.colocated.set(r.colocate, { node: holds[0]!.node, ranks: r.ranks });
      else c.ranks += r.ranks;
    }
    return holds;
  }

  /** A node where one more rank of `r` (task `uid`, holding `placed` so far) may go now, if any. */
  private candidate(uid: string, r: Request, placed: readonly Hold[]): NodeState | undefined {
    // Ranks of a colocated task all go on one node, so its first rank needs room for all.
    const fits =
      r.colocate !== undefined && r.ranks > 1
        ? (n: NodeState) => ranksFitFree(r, n) >= r.ranks
        : (n: NodeState) => rankFitsFree(r, n);
    const ok = (n: NodeState): boolean => this.mayUse(uid, r, n) && fits(n);
    // a lane is a core's worker on the agent's node, whatever its free cores (lanes.ts)
    if (r.lane) return this.home !== undefined && ok(this.home) ? this.home : undefined;
    if (r.colocate !== undefined) {
      const c = this.colocated.get(r.colocate);
      if (c !== undefined) return ok(c.node) ? c.node : undefined;
    }
    if (r.exclusive !== undefined) {
      // A node this task already took a rank on is its own (the tag is set once all are placed).
      const mine = placed.find((h) => rankFitsFree(r, h.node));
      if (mine !== undefined) return mine.node;
    }
    if (this.reservation?.uid === uid) {
      const n = this.reservation.nodes.find(ok);
      if (n !== undefined) return n;
    }
    if (r.exclusive !== undefined) {
      for (const n of this.exclusive.get(r.exclusive) ?? []) if (ok(n)) return n;
      for (const n of this.empty) if (ok(n)) return n;
      return undefined;
    }
    if (r.share > 0) {
      return this.index.findPartial(r.cores, r.share, ok) ?? this.index.findWhole(r.cores, 1, ok);
    }
    const gpus = r.gpuIndices?.length ?? r.gpus;
    return this.index.findWhole(r.cores, gpus, ok);
  }

  /** Ownership rules only (capacity is checked apart). */
  private mayUse(uid: string, r: Request, n: NodeState): boolean {
    if (n.reservedFor !== undefined && n.reservedFor !== uid) return false;
    if (r.home && n !== this.home) return false;
    if (r.colocate !== undefined && this.opensHeadGroup(uid, r.colocate)) return false;
    if (r.exclusive !== undefined) {
      return n.exclusiveTag === r.exclusive || (n.exclusiveTag === undefined && n.slots === 0);
    }
    return n.exclusiveTag === undefined;
  }

  /**
   * Whether task `uid` would open the colocate group `tag` while the head, of that tag too,
   * waits to open it: the group would then be bound away from the nodes reserved for the head.
   */
  private opensHeadGroup(uid: string, tag: string): boolean {
    const r = this.reservation;
    if (r === undefined || r.uid === uid || this.colocated.has(tag)) return false;
    return this.waitingIn.get(r.uid)?.req.colocate === tag;
  }

  /**
   * Keeps nodes reserved for the head (the first waiting task by priority, then age) while it
   * does not fit.
   */
  private updateReservation(): void {
    let head: { shape: Shape; uid: string } | undefined;
    for (const s of this.shapes.values()) {
      const e = s.queue[s.head];
      if (e === undefined) continue;
      if (head === undefined || byPriority(s, head.shape) < 0) head = { shape: s, uid: e.task.uid };
    }
    if (this.reservation !== undefined && this.reservation.uid === head?.uid) return;
    this.dropReservation();
    this.passable = undefined;
    if (head === undefined || !head.shape.blocked) return;
    const entry = head.shape.queue[head.shape.head]!;
    if ((entry.passed ?? 0) >= this.backfillLimit) this.reserve(head.uid, head.shape.req);
    else this.passable = { shape: head.shape, entry };
  }

  /**
   * A task of `shape` started ahead of the head that does not fit: counted, and once
   * `backfillLimit` tasks have, nodes are reserved for the head before anything else starts.
   */
  private passedBy(shape: Shape): void {
    const p = this.passable!;
    if (p.shape === shape) return;
    if (p.shape.queue[p.shape.head] !== p.entry || !p.shape.blocked) {
      this.passable = undefined; // it started, or left: the next round finds the new head
      return;
    }
    p.entry.passed = (p.entry.passed ?? 0) + 1;
    if (p.entry.passed >= this.backfillLimit) {
      this.passable = undefined;
      this.reserve(p.entry.task.uid, p.shape.req);
    }
  }

  /** Called when `shape`'s first task did not fit: moves the reservation if it is the new head. */
  private reserveIfHead(shape: Shape): void {
    const holder = this.reservation && this.waitingIn.get(this.reservation.uid);
    if (holder === undefined || byPriority(shape, holder) < 0) this.updateReservation();
  }

  /** Reserves the nodes with the most free capacity that together can hold the request. */
  private reserve(uid: string, r: Request): void {
    const nodes: NodeState[] = [];
    const bound = r.colocate !== undefined ? this.colocated.get(r.colocate)?.node : undefined;
    if (bound !== undefined) {
      if (bound.reservedFor === undefined && this.mayUse(uid, r, bound)) nodes.push(bound);
    } else {
      let ranks = 0;
      const need = r.colocate !== undefined ? 1 : r.ranks;
      for (const n of this.reservable()) {
        if (r.home && n !== this.home) continue;
        const k = ranksPerEmptyNode(r, n.spec);
        if (k === 0 || !rankFitsSize(r, n.spec)) continue;
        if (r.colocate !== undefined && k < r.ranks) continue;
        nodes.push(n);
        ranks += r.colocate !== undefined ? 1 : k;
        if (ranks >= need) break;
      }
    }
    if (nodes.length === 0) return;
    for (const n of nodes) {
      n.reservedFor = uid;
      this.refile(n);
    }
    this.reservation = { uid, nodes };
  }

  /**
   * Candidates for a reservation: open nodes, most free first, then nodes an exclusive tag owns
   * (not indexed), so that a head needing them too gets them: a reservation that cannot hold
   * the head would leave it to compete with backfill for the rest, possibly forever.
   */
  private *reservable(): Generator<NodeState> {
    yield* this.index.mostFree();
    for (const owned of this.exclusive.values()) yield* owned;
  }

  private dropReservation(): void {
    const r = this.reservation;
    if (r === undefined) return;
    this.reservation = undefined;
    for (const n of r.nodes) {
      n.reservedFor = undefined;
      this.refile(n);
    }
    // Every blocked shape is tried again, not only those the freed nodes could serve: the
    // next head must get its reservation before anything behind it starts (the property
    // tests show that the narrower re-try lets lower-priority tasks overtake).
    for (const set of [...this.blockedOn.values()]) for (const sh of [...set]) this.unblock(sh);
    this.again = true;
  }

  private block(shape: Shape): void {
    shape.blocked = true;
    this.waits?.blocked(shape.req.key);
    this.ready.delete(shape);
    const tag = shape.req.colocate;
    const on = tag !== undefined ? this.colocated.get(tag)?.node : undefined;
    let set = this.blockedOn.get(on);
    if (set === undefined) this.blockedOn.set(on, (set = new Set()));
    set.add(shape);
  }

  private unblock(shape: Shape): void {
    if (!shape.blocked) return;
    shape.blocked = false;
    this.blockedIn(shape)?.delete(shape);
    this.ready.add(shape);
  }

  /** The set a blocked shape was filed in (see block()). */
  private blockedIn(shape: Shape): Set<Shape> | undefined {
    const tag = shape.req.colocate;
    const on = tag !== undefined ? this.colocated.get(tag)?.node : undefined;
    const set = this.blockedOn.get(on);
    if (set?.has(shape) === true) return set;
    for (const other of this.blockedOn.values()) if (other.has(shape)) return other;
    return undefined;
  }

  private unblockGroup(tag: string): void {
    for (const set of [...this.blockedOn.values()]) {
      for (const s of [...set]) if (s.req.colocate === tag) this.unblock(s);
    }
  }

  private forgetShape(shape: Shape): void {
    this.shapes.delete(shape.req.key);
    this.waits?.gone(shape.req.key);
    this.ready.delete(shape);
    if (shape.blocked) this.blockedIn(shape)?.delete(shape);
  }

  private uncolocate(tag: string, ranks: number): void {
    const c = this.colocated.get(tag);
    if (c === undefined) return;
    c.ranks -= ranks;
    if (c.ranks > 0) return;
    this.colocated.delete(tag);
    this.unblockGroup(tag);
    // A head of this tag had the group's node reserved; it may now go anywhere, so reserve anew.
    const holder = this.reservation && this.waitingIn.get(this.reservation.uid);
    if (holder?.req.colocate === tag) this.dropReservation();
  }

  /** A node got capacity back: re-try the shapes that could use it. */
  private unblockFor(n: NodeState): void {
    this.unblockIn(this.blockedOn.get(undefined), n);
    this.unblockIn(this.blockedOn.get(n), n);
  }

  /** (Deleting the visited element while iterating a Set is safe.) */
  private unblockIn(set: Set<Shape> | undefined, n: NodeState): void {
    if (set === undefined || set.size === 0) return;
    for (const s of set) {
      const e = s.queue[s.head];
      if (e === undefined) continue;
      if (s.req.ranks > 1 || (this.mayUse(e.task.uid, s.req, n) && rankFitsFree(s.req, n))) {
        this.unblock(s);
      }
    }
  }

  /** Keeps the index and the empty set in line with a node's capacity and ownership. */
  private refile(n: NodeState): void {
    if (n.open) {
      this.index.update(n);
      if (n.slots === 0) this.empty.add(n);
      else this.empty.delete(n);
    } else {
      this.index.remove(n);
      this.empty.delete(n);
    }
  }
}
