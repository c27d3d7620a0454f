import type { Task } from '../client/task';
import type { Reason } from '../generated';

/** One task of a run as `--json` lists it. */
export interface RunTask {
  uid: string;
  name?: string;
  state: string;
  reason?: Reason;
  exitCode?: number | null;
  signal?: string | null;
  /** mode 'function': what the function returned. */
  result?: unknown;
}

export interface RunSummary {
  session: string;
  tasks: number;
  states: Record<string, number>;
  /** This run's time (a resumed run: since the resume). */
  seconds: number;
  /** Tasks that reached their final state during this run (a resume: not those before it). */
  endedInRun: number;
  /** endedInRun / seconds: what this run did, not the tasks that ended before it. */
  tasksPerS: number;
  /** Every task, in submission order. */
  taskList: RunTask[];
  /** Tasks that ended other than DONE, with why. */
  failures: { task: string; code: string; message: string }[];
  /** Set when the workload's timeoutS passed first: the tasks not yet ended, with their state. */
  timedOut?: { afterS: number; unfinished: { task: string; state: string }[] };
  /** Set when a signal stopped the run (its name): its tasks not ended were canceled. */
  interrupted?: string;
}

/** Tasks per second over `seconds` (0 when no time passed). */
export function taskRate(ended: number, seconds: number): number {
  return seconds > 0 ? ended / seconds : 0;
}

/** A rate as printed: two significant digits below 100 (0.32, 3.5, 47), whole above. */
export function formatRate(perS: number): string {
  return perS >= 100 ? perS.toFixed(0) : String(Number(perS.toPrecision(2)));
}

/** Whether `t` reached its final state at or after `since` (epoch ms). */
function endedSince(t: Task, since: number): boolean {
  if (!t.final) return false;
  const last = t.history.at(-1);
  // a final state with no time of its own (inferred) was seen now: this run's
  return last?.ts === undefined || last.ts >= since;
}

function listed(t: Task): RunTask {
  const out: RunTask = { uid: t.uid, state: t.state };
  if (t.description.name !== undefined) out.name = t.description.name;
  if (t.reason !== undefined) out.reason = t.reason;
  if (t.exitCode !== undefined) out.exitCode = t.exitCode;
  if (t.signal !== undefined) out.signal = t.signal;
  if (t.result !== undefined) out.result = t.result;
  return out;
}

/**
 * Summarizes the tasks as they are now; each is named as `label` says. `since`: when this run
 * began (epoch ms); its rate counts the tasks that ended since.
 */
export function summarize(
  session: string,
  tasks: Task[],
  seconds: number,
  end: { timeoutS?: number | undefined; interrupted?: string | undefined } = {},
  since = 0,
): RunSummary {
  const label = labeller(tasks);
  const states: Record<string, number> = {};
  const failures: RunSummary['failures'] = [];
  const unfinished: { task: string; state: string }[] = [];
  let endedInRun = 0;
  for (const t of tasks) {
    if (endedSince(t, since)) endedInRun++;
    states[t.state] = (states[t.state] ?? 0) + 1;
    if (!t.final) unfinished.push({ task: label(t), state: t.state });
    else if (t.state !== 'DONE' && t.reason !== undefined) {
      failures.push({ task: label(t), code: t.reason.code, message: t.reason.message });
    }
  }
  const summary: RunSummary = {
    session,
    tasks: tasks.length,
    states,
    seconds,
    endedInRun,
    tasksPerS: taskRate(endedInRun, seconds),
    failures,
    taskList: tasks.map(listed),
  };
  if (end.timeoutS !== undefined) summary.timedOut = { afterS: end.timeoutS, unfinished };
  if (end.interrupted !== undefined) summary.interrupted = end.interrupted;
  return summary;
}

/** A task's name, with its uid where another task has the same name; its uid when it has none. */
function labeller(tasks: Task[]): (t: Task) => string {
  const counts = new Map<string, number>();
  for (const t of tasks) {
    const n = t.description.name;
    if (n !== undefined) counts.set(n, (counts.get(n) ?? 0) + 1);
  }
  return (t) => {
    const n = t.description.name;
    if (n === undefined) return t.uid;
    return counts.get(n)! > 1 ? `${n} (${t.uid})` : n;
  };
}

/** The summary as printed on stdout; at most `limit` failures and unfinished tasks are listed. */
export function formatSummary(s: RunSummary, limit = 10): string {
  const rate = `${formatRate(s.tasksPerS)} tasks/s`;
  const time = `${s.seconds.toFixed(2)} s`;
  const lines = [
    s.endedInRun === s.tasks
      ? `session ${s.session}: ${s.tasks} tasks in ${time} (${rate})`
      : `session ${s.session}: ${s.tasks} tasks, ${s.endedInRun} ended in ${time} (${rate})`,
  ];
  if (s.interrupted !== undefined) {
    lines.push(`interrupted by ${s.interrupted}: the tasks not ended then were canceled`);
  }
  if (s.timedOut !== undefined) {
    const ended = s.tasks - s.timedOut.unfinished.length;
    lines.push(`timed out after ${s.timedOut.afterS} s: ${ended} of ${s.tasks} tasks ended`);
  }
  const states = Object.entries(s.states).sort();
  const width = Math.max(9, ...states.map(([state]) => state.length));
  for (const [state, n] of states) lines.push(`  ${state.padEnd(width)} ${n}`);
  const list = <T>(items: T[], line: (x: T) => string): void => {
    for (const x of items.slice(0, limit)) lines.push(`  ${line(x)}`);
    if (items.length > limit) lines.push(`  ... and ${items.length - limit} more`);
  };
  list(s.failures, (f) => `${f.task}: ${f.code}: ${f.message}`);
  if (s.timedOut !== undefined && s.timedOut.unfinished.length > 0) {
    lines.push('not ended:');
    list(s.timedOut.unfinished, (u) => `${u.task} (${u.state})`);
  }
  return `${lines.join('\n')}\n`;
}
