import { readFileSync } from 'node:fs';
import type { Workload } from '../generated';
import { ValidationError } from '../errors';
import { parseWorkload } from '../lib/validate';
import { PilotManager } from '../client/pilot-manager';
import { Session } from '../client/session';
import { TaskManager } from '../client/task-manager';
import type { Task } from '../client/task';
import { isFinalTaskState } from '../states/task-model';

export interface RunSummary {
  session: string;
  tasks: number;
  states: Record<string, number>;
  seconds: number;
  failures: { uid: string; code: string; message: string }[];
}

/** Reads and validates a workload file; errors name the file and each JSON path. */
export function loadWorkload(file: string): Workload {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ValidationError(`cannot read workload ${file}: ${(e as Error).message}`, [
      { path: '/', message: (e as Error).message },
    ]);
  }
  return parseWorkload(raw);
}

/** Runs a workload on its pilots (default: one local pilot with every core) to the end. */
export async function runWorkload(
  w: Workload,
  opts: { dir?: string; onProgress?: (final: number, total: number) => void } = {},
): Promise<RunSummary> {
  const t0 = Date.now();
  const session = await Session.open(opts.dir !== undefined ? { dir: opts.dir } : {});
  try {
    const pmgr = new PilotManager(session);
    const tmgr = new TaskManager(session);
    const pilots = await pmgr.submitPilots(w.pilots ?? [{ resource: 'local' }]);
    tmgr.addPilots(pilots);
    let finals = 0;
    tmgr.onState((_t, state) => {
      if (isFinalTaskState(state)) {
        opts.onProgress?.(++finals, w.tasks.length);
      }
    });
    const tasks = await tmgr.submitTasks(w.tasks);
    const timeout = w.timeoutS !== undefined ? { timeoutMs: w.timeoutS * 1000 } : {};
    await tmgr.waitTasks(timeout);
    // the work is done: services still serving are stopped, and end DONE
    const serving = tasks.filter((t) => t.description.mode === 'service' && !t.final);
    if (serving.length > 0) {
      const uids = serving.map((t) => t.uid);
      await tmgr.cancelTasks(uids);
      await tmgr.waitTasks({ uids, ...timeout });
    }
    return summarize(session.uid, tasks, (Date.now() - t0) / 1000);
  } finally {
    await session.close();
  }
}

function summarize(session: string, tasks: Task[], seconds: number): RunSummary {
  const states: Record<string, number> = {};
  const failures: RunSummary['failures'] = [];
  for (const t of tasks) {
    states[t.state] = (states[t.state] ?? 0) + 1;
    if (t.state !== 'DONE' && t.reason !== undefined) {
      failures.push({ uid: t.uid, code: t.reason.code, message: t.reason.message });
    }
  }
  return { session, tasks: tasks.length, states, seconds, failures };
}
