import { EventHeap } from '../../lib/event-heap';
import type { NodeState } from './node-state';
import { rankFitsFree, ranksFitFree, type Request } from './request';
import type { Allocation } from './running-ends';
import { giveBack, takeRank, type Hold } from './slots';

/** Waiting tasks a plan places, the first in the scheduler's order. */
export const PLANNED_TASKS = 128;
/** Node visits (fit checks) one plan may make: past them, later tasks get no estimate. */
const PLAN_BUDGET = 500_000;
/** Open nodes a fit looks at besides those the plan has touched (most free first). */
const OPEN_LOOKS = 1_024;

/** A waiting task as the plan sees it. */
export interface PlanTask {
  uid: string;
  req: Request;
  /** Its walltimeS in ms, if declared: it never starts where it would pass the drain point. */
  walltimeMs: number | undefined;
  /** How long it holds its slots once started: walltimeS, else timeoutS (ms); undefined: unknown. */
  holdMs: number | undefined;
}

/** What a plan reads of the scheduler, at `now`. */
export interface PlanInput {
  now: number;
  /** Waiting tasks in the order the scheduler tries them. */
  waiting: readonly PlanTask[];
  /** Running tasks whose end is known, earliest end first (RunningEnds.inOrder). */
  ends: Iterable<Allocation>;
  /** Open nodes, most free first. */
  open(): Iterable<NodeState>;
  home: NodeState | undefined;
  drainsAt: number | undefined;
  /** Later tasks that may start ahead of a waiting head before nothing passes it any more. */
  backfillLimit: number;
  /** The task nodes are reserved for now, if any: nothing passes it in the plan. */
  reservedFor: string | undefined;
  /**
   * The pilot's cap on launcher tasks, if any: how many more may start now, and whether a
   * waiting task needs one where the plan put it. Running tasks that hold one say so
   * (Allocation.launcher).
   */
  launchers?: { free: number; needs(uid: string, holds: readonly Hold[]): boolean } | undefined;
}

/** When a waiting task is expected to start (clock ms), or why that cannot be said. */
export type Estimate = { at: number } | { none: string };

const UNKNOWN_ENDS =
  'no estimate: the capacity it needs is held by tasks that declare neither walltimeS nor timeoutS';

/** Slots of a task the plan started, which go back at its end in the plan. */
interface End {
  holds: readonly Hold[];
  req: Request;
  /** It holds a launcher, given back at its end too. */
  launcher?: boolean | undefined;
}

/**
 * Plays the scheduler forward on copies of the nodes it touches: running tasks give their slots
 * back at their expected end (start + walltimeS, else timeoutS; at once when overdue), and the
 * waiting tasks start in order as soon as they fit, each holding its slots for its walltimeS
 * (else timeoutS). As in the scheduler, later tasks may pass a head that does not fit, up to
 * `backfillLimit` of them; then nothing passes it (the real scheduler still lets tasks start on
 * nodes not reserved for it, so estimates behind a reservation err late). A task that needs a
 * launcher starts only while one is free, as in the scheduler. Tags and function call lanes
 * are not planned. Pure: the real nodes are never changed.
 */
export function planStarts(input: PlanInput): Map<string, Estimate> {
  return new StartPlan(input).run();
}

class StartPlan {
  private readonly copies = new Map<NodeState, NodeState>();
  /** Ends of the tasks the plan started. */
  private readonly heap = new EventHeap();
  private readonly ends: End[] = [];
  private readonly out = new Map<string, Estimate>();
  private visits = 0;
  private pending: PlanTask[] = [];
  /** The first task of the order that did not fit, and how many passed it since. */
  private head: string | undefined;
  private passes = 0;
  /** Nodes reserved for a waiting task stay its own until it starts in the plan. */
  private reservedFor: string | undefined;
  /** Launchers free in the plan (Infinity: no cap). */
  private launchersFree: number;

  /** Running tasks by end, read one ahead. */
  private readonly running: Iterator<Allocation>;
  private nextRunning: Allocation | undefined;

  constructor(private readonly p: PlanInput) {
    this.running = p.ends[Symbol.iterator]();
    this.nextRunning = nextOf(this.running);
    this.launchersFree = p.launchers?.free ?? Infinity;
  }

  run(): Map<string, Estimate> {
    for (const t of this.p.waiting) {
      const why = unplanned(t.req);
      if (why !== undefined) this.out.set(t.uid, { none: why });
      else this.pending.push(t);
    }
    if (this.pending.some((t) => t.uid === this.p.reservedFor)) {
      this.reservedFor = this.head = this.p.reservedFor;
      this.passes = this.p.backfillLimit;
    }
    let t = this.p.now;
    for (;;) {
      this.round(t);
      if (this.pending.length === 0) break;
      if (this.visits > PLAN_BUDGET) return this.rest('no estimate: beyond what the plan looks at');
      const next = this.nextEnd();
      if (next === undefined) return this.rest(UNKNOWN_ENDS);
      t = next;
      while (this.nextRunning !== undefined && this.runningEnd() === t) {
        this.release(this.nextRunning, false);
        this.nextRunning = nextOf(this.running);
      }
      while (this.heap.size > 0 && this.heap.peekTime() === t) {
        this.release(this.ends[this.heap.pop()]!, true);
      }
    }
    return this.out;
  }

  /** When the next slots go back in the plan, if any ever do. */
  private nextEnd(): number | undefined {
    const a = this.nextRunning !== undefined ? this.runningEnd() : Infinity;
    const b = this.heap.peekTime() ?? Infinity;
    const t = Math.min(a, b);
    return t === Infinity ? undefined : t;
  }

  /** The next running task's end; one overdue is expected to end now. */
  private runningEnd(): number {
    return Math.max(this.nextRunning!.endsAt!, this.p.now);
  }

  /** Starts, in order, the pending tasks that fit at `t`. */
  private round(t: number): void {
    const failed = new Set<string>();
    const left: PlanTask[] = [];
    for (const task of this.pending) {
      const drainsAt = this.p.drainsAt;
      if (
        task.walltimeMs !== undefined &&
        drainsAt !== undefined &&
        t + task.walltimeMs > drainsAt
      ) {
        this.out.set(task.uid, { none: 'no estimate: it would not end before the pilot drains' });
        continue;
      }
      const blocked = this.head !== undefined && this.head !== task.uid;
      if ((blocked && this.passes >= this.p.backfillLimit) || failed.has(task.req.key)) {
        left.push(task);
        continue;
      }
      const holds = this.place(task);
      const launcher = holds !== undefined && this.p.launchers?.needs(task.uid, holds) === true;
      if (launcher && this.launchersFree === 0) {
        for (const h of holds) giveBack(h); // as in the scheduler: it holds nothing meanwhile
        failed.add(task.req.key);
        left.push(task);
        continue;
      }
      if (launcher) this.launchersFree--;
      if (holds === undefined) {
        // a task asking the same behind it fits no better (nodes held for it aside)
        if (task.uid !== this.reservedFor) failed.add(task.req.key);
        this.head ??= task.uid;
        left.push(task);
        continue;
      }
      this.out.set(task.uid, { at: t });
      if (task.uid === this.reservedFor) this.reservedFor = undefined;
      if (task.holdMs !== undefined) {
        this.ends.push({ holds, req: task.req, launcher });
        this.heap.push(t + task.holdMs, this.ends.length - 1);
      }
      if (task.uid === this.head) {
        this.head = undefined;
        this.passes = 0;
      } else if (blocked) this.passes++;
    }
    this.pending = left;
  }

  /** Takes every rank of the task on copies of nodes it may use, or nothing. */
  private place(task: PlanTask): Hold[] | undefined {
    const r = task.req;
    const holds: Hold[] = [];
    const fits = (n: NodeState): number => {
      this.visits++;
      const owner = n.reservedFor;
      if (owner !== undefined && owner === this.reservedFor && owner !== task.uid) return 0;
      if (n.exclusiveTag !== undefined) return 0;
      return r.ranks === 1 ? (rankFitsFree(r, n) ? 1 : 0) : ranksFitFree(r, n);
    };
    for (const n of this.candidates(r)) {
      for (let k = Math.min(fits(n), r.ranks - holds.length); k > 0; k--) {
        holds.push(takeRank(n, r));
      }
      if (holds.length === r.ranks) return holds;
      if (this.visits > PLAN_BUDGET) break;
    }
    for (const h of holds) giveBack(h);
    return undefined;
  }

  /** Copies of the nodes the plan touched, then the open ones (copied when looked at). */
  private *candidates(r: Request): Generator<NodeState> {
    if (r.home) {
      if (this.p.home !== undefined) yield this.at(this.p.home);
      return;
    }
    const seen = new Set<NodeState>();
    for (const [real, copy] of this.copies) {
      seen.add(real);
      yield copy;
    }
    let looks = 0;
    for (const n of this.p.open()) {
      if (++looks > OPEN_LOOKS) return;
      if (!seen.has(n)) yield this.at(n);
    }
  }

  private at(n: NodeState): NodeState {
    let c = this.copies.get(n);
    if (c === undefined) this.copies.set(n, (c = n.copy()));
    return c;
  }

  /** Gives a task's slots back: on the plan's copies (`planned`: they are on them already). */
  private release(e: End, planned: boolean): void {
    if (e.launcher === true) this.launchersFree++;
    for (const h of e.holds) {
      if (h.lane === true) continue; // a lane's core goes back with its last call: not planned
      const n = planned ? h.node : this.at(h.node);
      giveBack(planned ? h : { ...h, node: n });
      if (e.req.exclusive !== undefined && --n.exclusiveSlots === 0) n.exclusiveTag = undefined;
    }
  }

  /** Every task still pending gets no estimate, for `why`. */
  private rest(why: string): Map<string, Estimate> {
    for (const t of this.pending) this.out.set(t.uid, { none: why });
    return this.out;
  }
}

/** Why a request is left out of plans, if it is. */
function unplanned(r: Request): string | undefined {
  if (r.lane) return 'no estimate: function calls queue in worker lanes';
  if (r.colocate !== undefined || r.exclusive !== undefined) {
    return 'no estimate: tasks with colocate or exclusive tags are not planned';
  }
  return undefined;
}

function nextOf(it: Iterator<Allocation>): Allocation | undefined {
  const r = it.next();
  return r.done === true ? undefined : r.value;
}
