import { isFinalTaskState } from '../../states/task-model';
import { orderByTime } from '../time-order';
import type { Profile } from '../types';

/** The four counts the chart plots, in the order of StateCounts' arrays. */
export const CATEGORIES = ['pending', 'running', 'done', 'failed'] as const;
const PENDING = 0;
const RUNNING = 1;
const DONE = 2;
const FAILED = 3;

/** How many tasks were pending, running, done and failed (or canceled) over time. */
export interface StateCounts {
  /** ms since the chart's origin; each count holds from its time to the next. */
  t: number[];
  pending: number[];
  running: number[];
  done: number[];
  failed: number[];
}

/**
 * A task is pending from its first state until an attempt starts executing (AGENT_EXECUTING,
 * else its launch), running until that attempt ends, then done or failed; a retry makes it
 * pending again. The step series is thinned to at most `points` steps (the last counts of
 * each stretch of time), which keeps a million tasks' series small.
 */
export function stateCounts(profile: Profile, origin: number, points = 1500): StateCounts {
  const t: number[] = [];
  const from: number[] = [];
  const to: number[] = [];
  const move = (ts: number, a: number, b: number): void => {
    t.push(ts - origin);
    from.push(a);
    to.push(b);
  };
  for (const task of profile.tasks) {
    let cat = -1;
    task.attempts.forEach((a, i) => {
      const first = a.states[0]?.ts;
      if (first !== undefined) move(first, cat, (cat = PENDING));
      const exec = a.states.find((s) => s.state === 'AGENT_EXECUTING')?.ts ?? a.launched;
      if (exec !== undefined) move(exec, cat, (cat = RUNNING));
      const last = a.states[a.states.length - 1];
      if (i === task.attempts.length - 1 && last !== undefined && isFinalTaskState(last.state)) {
        move(last.ts, cat, (cat = last.state === 'DONE' ? DONE : FAILED));
      }
    });
  }
  const order = orderByTime(Float64Array.from(t));
  const now = [0, 0, 0, 0];
  const out: StateCounts = { t: [], pending: [], running: [], done: [], failed: [] };
  const span = t.length > 0 ? t[order[order.length - 1]!]! - t[order[0]!]! : 0;
  const step = span / points;
  const bucket = (ts: number): number => (step > 0 ? Math.floor(ts / step) : ts);
  const push = (ts: number): void => {
    const k = out.t.length - 1;
    // the same stretch as the last step: keep its time, take the later counts
    if (k > 0 && bucket(ts) === bucket(out.t[k]!)) {
      CATEGORIES.forEach((c, i) => (out[c][k] = now[i]!));
      return;
    }
    out.t.push(ts);
    CATEGORIES.forEach((c, i) => out[c].push(now[i]!));
  };
  for (let k = 0; k < order.length; k++) {
    const i = order[k]!;
    if (from[i]! >= 0) now[from[i]!]!--;
    now[to[i]!]!++;
    const next = order[k + 1];
    if (next === undefined || t[next]! > t[i]!) push(t[i]!);
  }
  return out;
}
