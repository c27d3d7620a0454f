import type { TaskRecord } from '../../generated';
import type { Request } from './request';

/** A waiting task and its place in the order within a priority. */
export interface Entry {
  task: TaskRecord;
  /** Its submission number (`seq`); without one, the highest seen when it arrived. */
  submitted: number;
  /** Arrival here: breaks ties (a task without `seq` comes after those it arrived behind). */
  arrival: number;
  /** While it is the head and does not fit: the later tasks started ahead of it so far. */
  passed?: number;
}

/** Waiting tasks that ask for exactly the same capacity, in submission order. */
export interface Shape {
  req: Request;
  queue: Entry[];
  head: number;
  /** Its head did not fit at the last try, and capacity it could use has not come back since. */
  blocked: boolean;
  /** Blocked because its head needs a launcher and all are in use (launchers.ts). */
  launcher?: boolean;
}

/** Higher priority first, then the head submitted first, then the head that arrived first. */
export function byPriority(a: Shape, b: Shape): number {
  return before(a.req, a.queue[a.head]!, b.req, b.queue[b.head]!);
}

/** Inserts a shape into a list sorted by byPriority. */
export function insertByPriority(sorted: Shape[], shape: Shape): void {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (byPriority(sorted[mid]!, shape) < 0) lo = mid + 1;
    else hi = mid;
  }
  sorted.splice(lo, 0, shape);
}

/**
 * The first `limit` waiting tasks of all shapes in the order the scheduler tries them (each
 * shape's queue is in order already: a merge), with their shapes.
 */
export function firstWaiting(shapes: Iterable<Shape>, limit: number): [Entry, Shape][] {
  const at = new Map<Shape, number>();
  for (const s of shapes) if (s.head < s.queue.length) at.set(s, s.head);
  const out: [Entry, Shape][] = [];
  while (out.length < limit && at.size > 0) {
    let best: Shape | undefined;
    for (const [s, i] of at) {
      if (
        best === undefined ||
        before(s.req, s.queue[i]!, best.req, best.queue[at.get(best)!]!) < 0
      ) {
        best = s;
      }
    }
    const i = at.get(best!)!;
    out.push([best!.queue[i]!, best!]);
    if (i + 1 < best!.queue.length) at.set(best!, i + 1);
    else at.delete(best!);
  }
  return out;
}

function before(ra: Request, x: Entry, rb: Request, y: Entry): number {
  return rb.priority - ra.priority || x.submitted - y.submitted || x.arrival - y.arrival;
}
