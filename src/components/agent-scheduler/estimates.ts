import type { TaskDescription, TaskRecord } from '../../generated';
import type { Request } from './request';
import type { Entry, Shape } from './shapes';
import { PLANNED_TASKS, type Estimate, type PlanTask } from './start-plan';

/** Estimated starts of a shape's first waiting tasks, in order, and why later ones have none. */
export interface ShapeEstimates {
  starts: { task: string; attempt: number; at: number }[];
  noEstimate?: string;
}

/** Why a waiting task past the planned ones has no estimate. */
export const BEYOND_PLAN = `no estimate: only the first ${PLANNED_TASKS} waiting tasks of the pilot are planned`;

/** Estimates are whole seconds, rounded up: a report changes when a start moves by a second. */
const SECOND = 1000;

/** The plan's view of a waiting task. */
export function planTask(task: TaskRecord, req: Request): PlanTask {
  const d = task.description;
  const walltimeMs = d.walltimeS !== undefined ? d.walltimeS * 1000 : undefined;
  return { uid: task.uid, req, walltimeMs, holdMs: holdMsOf(d) };
}

/** How long a task holds its slots once started: walltimeS, cut by timeoutS (ms), if known. */
export function holdMsOf(d: TaskDescription): number | undefined {
  const w = d.walltimeS;
  const t = d.timeoutS;
  const s = w !== undefined && t !== undefined ? Math.min(w, t) : (w ?? t);
  return s !== undefined ? s * 1000 : undefined;
}

/**
 * A plan's estimates by shape. A shape with waiting tasks past the listed ones says why they
 * have none: the first reason the plan gave for one of its tasks, else that only the first
 * PLANNED_TASKS of the pilot are planned.
 */
export function estimatesByShape(
  waiting: readonly (readonly [Entry, Shape])[],
  plan: ReadonlyMap<string, Estimate>,
): Map<string, ShapeEstimates> {
  const out = new Map<string, ShapeEstimates>();
  for (const [e, shape] of waiting) {
    const est = plan.get(e.task.uid);
    let s = out.get(shape.req.key);
    if (s === undefined) out.set(shape.req.key, (s = { starts: [] }));
    if (est === undefined) continue;
    if ('at' in est) {
      const at = Math.ceil(est.at / SECOND) * SECOND;
      s.starts.push({ task: e.task.uid, attempt: e.task.attempt, at });
    } else s.noEstimate ??= est.none;
  }
  for (const [, shape] of waiting) {
    const s = out.get(shape.req.key)!;
    if (s.noEstimate === undefined && shape.queue.length - shape.head > s.starts.length) {
      s.noEstimate = BEYOND_PLAN;
    }
  }
  return out;
}
