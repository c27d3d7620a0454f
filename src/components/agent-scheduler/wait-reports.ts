import type { WaitReason } from '../../generated';
import type { Clock, Timer } from '../../lib/clock';
import type { ShapeEstimates } from './estimates';

/** At most one report of waiting reasons per this many ms (the first after a quiet spell at once). */
export const WAIT_REPORT_MS = 500;

/**
 * A change of waiting reasons: the reason shared by the waiting tasks of one shape (tasks that
 * ask exactly the same), named by its first waiting task; without `reason`, none waits any more.
 */
export interface ShapeWait extends Partial<ShapeEstimates> {
  shape: string;
  task?: string;
  attempt?: number;
  reason?: WaitReason;
}

/**
 * The first waiting task of a shape and its reason, as the scheduler computes it on demand, with
 * the estimated starts of its tasks when the scheduler plans them.
 */
export type ShapeWaitOf = (
  shape: string,
) => ({ task: string; attempt: number; reason: WaitReason } & Partial<ShapeEstimates>) | undefined;

/**
 * Which shapes' reasons to compute and send, and when. The scheduler marks shapes (a shape that
 * blocked, one that went) and capacity moves; nothing is computed then. A timer on the
 * injected clock makes one report per WAIT_REPORT_MS at most, computing only marked shapes (all
 * those sent before, once capacity moved) and sending only reasons that changed: an agent with
 * 100,000 waiting tasks of a few shapes sends a few reasons, and a task placed at once costs a
 * flag test. With a `plan` (estimated starts), one plan is made per report, before the reasons
 * are computed, and every shape sent is computed again on any change, since an arrival or an
 * end moves the starts of every shape behind it.
 */
export class WaitReports {
  private readonly marked = new Set<string>();
  /** Shapes whose reason was sent, with what was sent (to send changes only). */
  private readonly sent = new Map<string, string>();
  private moved = false;
  private timer: Timer | undefined;
  private last = -Infinity;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly waitOf: ShapeWaitOf,
    private readonly report: (waits: ShapeWait[]) => void,
    /** Makes the plan the reasons of one report read (estimated starts). */
    private readonly plan?: () => void,
  ) {}

  /** The shape's first task did not fit (again). */
  blocked(shape: string): void {
    this.marked.add(shape);
    if (this.plan !== undefined) this.moved = true;
    this.arm();
  }

  /** No task of the shape waits any more. */
  gone(shape: string): void {
    if (!this.sent.has(shape)) return;
    this.marked.add(shape);
    if (this.plan !== undefined) this.moved = true;
    this.arm();
  }

  /** A task joined a shape behind its first: only estimated starts can change. */
  joined(): void {
    if (this.plan === undefined || this.sent.size === 0) return;
    this.moved = true;
    this.arm();
  }

  /** Capacity was taken or given back: the largest free in reasons sent may be stale. */
  capacityMoved(): void {
    if (this.sent.size === 0 || this.moved) return;
    this.moved = true;
    this.arm();
  }

  /** Sends every reason again at the next report (a resumed client knows none). */
  resend(shapes: Iterable<string>): void {
    this.sent.clear();
    for (const s of shapes) this.marked.add(s);
    if (this.marked.size > 0) this.arm();
  }

  /** No more reports (the agent is going away; its tasks end). */
  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  private arm(): void {
    if (this.timer !== undefined || this.stopped) return;
    const delay = Math.max(0, this.last + WAIT_REPORT_MS - this.clock.now());
    this.timer = this.clock.setTimeout(() => this.due(), delay);
  }

  private due(): void {
    this.timer = undefined;
    this.last = this.clock.now();
    const shapes = this.moved ? new Set([...this.marked, ...this.sent.keys()]) : this.marked;
    this.moved = false;
    if (shapes.size > 0) this.plan?.();
    const out: ShapeWait[] = [];
    for (const shape of shapes) {
      const w = this.waitOf(shape);
      if (w === undefined) {
        if (this.sent.delete(shape)) out.push({ shape });
        continue;
      }
      const starts = w.starts?.map((s) => `${s.task}@${s.at}`).join(',') ?? '';
      const said = `${w.task}\u0000${w.attempt}\u0000${w.reason.message}\u0000${starts}\u0000${w.noEstimate ?? ''}`;
      if (this.sent.get(shape) === said) continue;
      this.sent.set(shape, said);
      out.push({ shape, ...w });
    }
    this.marked.clear();
    if (out.length > 0) this.report(out);
  }
}
