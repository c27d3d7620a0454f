import type { Task } from '../client/task';

export interface RunSummary {
  session: string;
  tasks: number;
  states: Record<string, number>;
  seconds: number;
  /** Tasks that ended other than DONE, with why. */
  failures: { task: string; code: string; message: string }[];
  /** Set when the workload's timeoutS passed first: the tasks not yet ended, with their state. */
  timedOut?: { afterS: number; unfinished: { task: string; state: string }[] };
  /** Set when a signal stopped the run (its name): its tasks not ended were canceled. */
  interrupted?: string;
}

/** Summarizes the tasks as they are now; each is named as `label` says. */
export function summarize(
  session: string,
  tasks: Task[],
  seconds: number,
  end: { timeoutS?: number | undefined; interrupted?: string | undefined } = {},
): RunSummary {
  const label = labeller(tasks);
  const states: Record<string, number> = {};
  const failures: RunSummary['failures'] = [];
  const unfinished: { task: string; state: string }[] = [];
  for (const t of tasks) {
    states[t.state] = (states[t.state] ?? 0) + 1;
    if (!t.final) unfinished.push({ task: label(t), state: t.state });
    else if (t.state !== 'DONE' && t.reason !== undefined) {
      failures.push({ task: label(t), code: t.reason.code, message: t.reason.message });
    }
  }
  const summary: RunSummary = { session, tasks: tasks.length, states, seconds, failures };
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
  const rate = s.tasks / Math.max(s.seconds, 1e-3);
  const lines = [
    `session ${s.session}: ${s.tasks} tasks in ${s.seconds.toFixed(2)} s (${rate.toFixed(0)} tasks/s)`,
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
