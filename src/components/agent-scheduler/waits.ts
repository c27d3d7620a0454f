import type { TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { DrainPoint } from './drain-point';
import {
  BEYOND_PLAN,
  estimatesByShape,
  holdMsOf,
  planTask,
  type ShapeEstimates,
} from './estimates';
import type { Launchers } from './launchers';
import type { Placement } from './placement';
import type { Request } from './request';
import { RunningEnds, type Allocation } from './running-ends';
import { firstWaiting, type Shape } from './shapes';
import { PLANNED_TASKS, planStarts } from './start-plan';
import { asksOf, heldNodes, TagHolders, waitReasonOf, type WaitView } from './wait-reasons';
import { WaitReports, type ShapeWait, type ShapeWaitOf } from './wait-reports';

/**
 * What the AgentScheduler tells of its waiting tasks, when its effects take it (reportWaits):
 * why each blocked shape's first task waits (wait-reasons.ts) and when the first ones are
 * expected to start (start-plan.ts), in reports made by WaitReports. It keeps what those read
 * and the scheduler does not need: running tasks by expected end and per tag. The core tells it
 * what changed, from its handlers. Pure.
 */
export class Waits {
  private readonly reports: WaitReports;
  /** Running tasks by expected end, for estimated starts. */
  private readonly ends = new RunningEnds();
  /** Running tasks per tag, which reasons name. */
  private readonly tagRuns = new TagHolders();
  /** Estimated starts by shape, from the plan made for the report being computed. */
  private estimates = new Map<string, ShapeEstimates>();

  constructor(
    private readonly clock: Clock,
    report: (waits: ShapeWait[]) => void,
    /** The core's waiting shapes by key, and running tasks by uid. */
    private readonly shapes: ReadonlyMap<string, Shape>,
    private readonly allocated: ReadonlyMap<string, Allocation>,
    private readonly placement: Placement,
    private readonly drain: DrainPoint,
    private readonly backfillLimit: number,
    /** The pilot's launchers, when it caps them: a shape may wait for one. */
    private readonly launchers?: Launchers,
  ) {
    this.reports = new WaitReports(clock, this.waitOf, report, () => this.plan());
  }

  /** A shape's first task did not fit (again), or another task is now first. */
  blocked(key: string): void {
    this.reports.blocked(key);
  }

  /** No task of the shape waits any more. */
  gone(key: string): void {
    this.reports.gone(key);
  }

  /** A task joined a shape behind its first. */
  joined(): void {
    this.reports.joined();
  }

  /**
   * Task `task` started with `a`: when it is expected to end, for estimated starts (a follower
   * ends its hold after the one it follows, whose slots it takes over).
   */
  started(task: TaskRecord, a: Allocation, now: number): void {
    const hold = holdMsOf(task.description);
    const leader = task.follows !== undefined ? this.allocated.get(task.follows) : undefined;
    if (leader !== undefined) leader.handedOn = true;
    const from = task.follows !== undefined ? leader?.endsAt : now;
    if (hold !== undefined && from !== undefined) a.endsAt = from + hold;
    if (this.launchers?.holds(task.uid) === true) a.launcher = true;
    this.ends.started(a);
    this.reports.capacityMoved();
    this.tagRuns.started(a.req, task.uid);
  }

  /** A running task's slots came back from the Executor (a follower may hold them now). */
  ended(a: Allocation): void {
    this.ends.ended(a);
  }

  /** Task `uid`'s slots went back to its nodes. */
  released(r: Request, uid: string): void {
    this.tagRuns.ended(r, uid);
    this.reports.capacityMoved();
  }

  /** The client resumed: it knows no reason, so every one is sent again. */
  resend(): void {
    this.reports.resend(this.shapes.keys());
  }

  stop(): void {
    this.reports.stop();
  }

  /** What a waiting shape's first task waits for, computed when reasons are reported. */
  private readonly waitOf: ShapeWaitOf = (key) => {
    const shape = this.shapes.get(key);
    const e = shape?.blocked === true ? shape.queue[shape.head] : undefined;
    if (e === undefined) return undefined;
    const { uid, attempt } = e.task;
    const now = this.clock.now();
    const r = shape!.req;
    const reason =
      shape!.launcher === true && this.launchers !== undefined
        ? this.launchers.reason(asksOf(r), now)
        : waitReasonOf(uid, r, this.waitView, now);
    const est = this.estimates.get(key) ?? { starts: [], noEstimate: BEYOND_PLAN };
    return { task: uid, attempt, reason, ...est };
  };

  /** Plays the queue forward for the estimated starts the next report carries (start-plan.ts). */
  private plan(): void {
    if (this.drain.passed) {
      const noEstimate = 'no estimate: the pilot is past its drain point, where no task starts';
      this.estimates = new Map([...this.shapes.keys()].map((k) => [k, { starts: [], noEstimate }]));
      return;
    }
    const waiting = firstWaiting(this.shapes.values(), PLANNED_TASKS);
    const l = this.launchers;
    const records = l !== undefined ? new Map(waiting.map(([e]) => [e.task.uid, e.task])) : null;
    const plan = planStarts({
      now: this.clock.now(),
      waiting: waiting.map(([e, s]) => planTask(e.task, s.req)),
      ends: this.ends.inOrder(),
      open: () => this.placement.index.mostFree(),
      home: this.placement.home,
      drainsAt: this.drain.at,
      backfillLimit: this.backfillLimit,
      reservedFor: this.placement.reservedFor,
      launchers: l && {
        free: l.max - l.inUse,
        needs: (uid, holds) => l.wouldNeed(records!.get(uid)!, holds),
      },
    });
    this.estimates = estimatesByShape(waiting, plan);
  }

  /** What a reason reads of the scheduler (wait-reasons.ts). */
  private readonly waitView: WaitView = {
    held: () => heldNodes(this.placement.reserved, this.placement.exclusive.values()),
    open: () => this.placement.index.mostFree(),
    home: () => this.placement.home,
    colocatedOn: (tag) => this.placement.colocated.get(tag)?.node,
    opensGroupFirst: (uid, tag) =>
      this.placement.opensHeadGroup(uid, tag) ? this.placement.reservedFor : undefined,
    holders: (kind, tag) => this.tagRuns[kind].first(tag),
  };
}
