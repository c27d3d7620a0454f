import { readFileSync } from 'node:fs';
import type { Workload } from '../generated';
import { TimeoutError, ValidationError } from '../errors';
import { parseWorkload } from '../lib/validate';
import { PilotManager } from '../client/pilot-manager';
import { Session } from '../client/session';
import { TaskManager } from '../client/task-manager';
import { isFinalTaskState } from '../states/task-model';
import { type RunSummary, summarize } from './summary';

export type { RunSummary } from './summary';

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

/**
 * Runs a workload on its pilots (default: one local pilot with every core) to the end, or until
 * its timeoutS passes: then the summary says what had not ended (the session's close stops it).
 */
export async function runWorkload(
  w: Workload,
  opts: { dir?: string; onProgress?: (final: number, total: number) => void } = {},
): Promise<RunSummary> {
  const t0 = Date.now();
  const session = await Session.open(opts.dir !== undefined ? { dir: opts.dir } : {});
  try {
    if (w.tasks.length === 0) return summarize(session.uid, [], (Date.now() - t0) / 1000);
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
    // timeoutS counts from here (pilots may queue first), for the work and the services' stop together
    const deadline = w.timeoutS !== undefined ? Date.now() + w.timeoutS * 1000 : undefined;
    const left = (): { timeoutMs?: number } =>
      deadline !== undefined ? { timeoutMs: Math.max(deadline - Date.now(), 0) } : {};
    try {
      await tmgr.waitTasks(left());
      // the work is done: services still serving are stopped, and end DONE
      const serving = tasks.filter((t) => t.description.mode === 'service' && !t.final);
      if (serving.length > 0) {
        const uids = serving.map((t) => t.uid);
        await tmgr.cancelTasks(uids);
        await tmgr.waitTasks({ uids, ...left() });
      }
    } catch (e) {
      if (!(e instanceof TimeoutError)) throw e;
      return summarize(session.uid, tasks, (Date.now() - t0) / 1000, w.timeoutS);
    }
    return summarize(session.uid, tasks, (Date.now() - t0) / 1000);
  } finally {
    await session.close();
  }
}
