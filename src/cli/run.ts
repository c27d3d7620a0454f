import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Workload } from '../generated';
import { TimeoutError, UsageError, ValidationError } from '../errors';
import { PRIVATE_FILE } from '../lib/private-files';
import { parseWorkload } from '../lib/validate';
import { PilotManager } from '../client/pilot-manager';
import { Session } from '../client/session';
import { runtimeOf } from '../client/runtime/runtime';
import type { Task } from '../client/task';
import { TaskManager } from '../client/task-manager';
import { type RunSummary, summarize } from './summary';

export type { RunSummary } from './summary';

/** The copy of its workload a run keeps in its session directory, for `run --resume`. */
export const SAVED_WORKLOAD = 'workload.json';
/** The pid of the `pilotfish run` that drives the session now, so that no second one resumes it. */
const RUN_PID = 'run.pid';
/** How long a stopping run waits for its canceled tasks before it ends the pilots anyway. */
const CANCEL_WAIT_MS = 30_000;

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

export interface RunOptions {
  dir?: string;
  /** The state store (Session.open's `store`); default the workload's, else embedded. */
  store?: string;
  /** Called once the session is open, before anything is submitted. */
  onSession?: (session: Session) => void;
  /** Called once the tasks are submitted (or, resumed, taken back): to show their progress. */
  onTasks?: (tasks: readonly Task[]) => void;
  /**
   * Settles when the run must stop (a signal): the tasks not ended are canceled, the pilots
   * end, and the summary says it was `interrupted` by the value it resolved with.
   */
  stop?: Promise<string>;
}

/**
 * Runs a workload on its pilots (default: one local pilot with every core) to the end, or until
 * its timeoutS passes (the summary says what had not ended), or until `stop`. The workload is
 * saved in the session directory (0600) for `resumeWorkload`.
 */
export async function runWorkload(w: Workload, opts: RunOptions = {}): Promise<RunSummary> {
  const store = opts.store ?? w.store;
  const session = await Session.open({
    ...(opts.dir !== undefined ? { dir: opts.dir } : {}),
    ...(store !== undefined ? { store } : {}),
  });
  writeFileSync(path.join(session.dir, SAVED_WORKLOAD), JSON.stringify(w), { mode: PRIVATE_FILE });
  // journaled too: a MongoDB session's journal is in its database, for a resume elsewhere;
  // its URI is not (it may hold a password, and a resume is given it again)
  const { store: _store, ...workload } = w;
  runtimeOf(session).journal.append({ t: 'workload', workload });
  writeFileSync(path.join(session.dir, RUN_PID), `${process.pid}\n`, { mode: PRIVATE_FILE });
  return drive(session, w, false, opts);
}

/**
 * Takes up the run of the session in `sessionDir` whose client ended before its tasks did
 * (killed, or left by a second Ctrl-C): reopens the session (Session.open resume), takes back
 * its pilots and tasks, submits what the first run had not, waits for every task and
 * summarizes all of them. timeoutS counts from the resume.
 */
export async function resumeWorkload(
  sessionDir: string,
  opts: Omit<RunOptions, 'dir'> = {},
): Promise<RunSummary> {
  // no directory: a MongoDB session's is made again from its database by the open below
  const fromDatabase = !existsSync(sessionDir);
  const file = path.join(sessionDir, SAVED_WORKLOAD);
  let w: Workload | undefined;
  try {
    if (!fromDatabase) w = parseWorkload(JSON.parse(readFileSync(file, 'utf8')));
  } catch (e) {
    throw new UsageError(
      `cannot resume ${sessionDir}: no workload saved by pilotfish run (${(e as Error).message})`,
    );
  }
  // a session has one client: a second one would bind its addresses and write its store too
  const running = liveRun(sessionDir);
  if (running !== undefined) {
    throw new UsageError(
      `cannot resume ${path.basename(sessionDir)}: pilotfish run (pid ${running}) still runs it ` +
        '(stop it first, or follow its tasks with pilotfish tail)',
    );
  }
  // the store the session was opened with (its directory says), or the URI given again
  const session = await Session.open({
    dir: path.dirname(sessionDir),
    resume: path.basename(sessionDir),
    ...(opts.store !== undefined ? { store: opts.store } : {}),
  });
  if (w === undefined) {
    try {
      w = journaledWorkload(session, opts.store);
    } catch (e) {
      await session.close();
      throw e;
    }
    writeFileSync(file, JSON.stringify(w), { mode: PRIVATE_FILE });
  }
  writeFileSync(path.join(sessionDir, RUN_PID), `${process.pid}\n`, { mode: PRIVATE_FILE });
  return drive(session, w, true, opts);
}

/** The workload a session's journal holds (a directory made again from the database). */
function journaledWorkload(session: Session, store: string | undefined): Workload {
  const entry = runtimeOf(session).resumed.find((e) => e.t === 'workload');
  if (entry?.t !== 'workload') {
    throw new UsageError(
      `cannot resume ${session.uid}: its journal holds no workload of pilotfish run`,
    );
  }
  return parseWorkload({ ...entry.workload, ...(store !== undefined ? { store } : {}) });
}

/** The pid of a live `pilotfish run` that the session's run.pid names, if any. */
function liveRun(sessionDir: string): number | undefined {
  let pid: number;
  let cmdline: string;
  try {
    pid = Number(readFileSync(path.join(sessionDir, RUN_PID), 'utf8').trim());
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined; // no run.pid, or its process is gone
  }
  // a pid used again since by another program is not a run
  return /pilotfish|cli\/main\.js/.test(cmdline) ? pid : undefined;
}

async function drive(
  session: Session,
  w: Workload,
  resumed: boolean,
  opts: RunOptions,
): Promise<RunSummary> {
  const t0 = Date.now();
  let stopped: string | undefined;
  const stop = new Promise<'stop'>((resolve) => {
    void opts.stop?.then((why) => {
      stopped = why;
      resolve('stop');
    });
  });
  const seconds = (): number => (Date.now() - t0) / 1000;
  try {
    opts.onSession?.(session);
    if (w.tasks.length === 0) return summarize(session.uid, [], seconds(), {}, t0);
    // created in this order in both runs: the journal names managers by their order
    // a resumed run whose pilot's agent is gone (killed, or its grace ended) goes on on a new one
    const late: { tmgr?: TaskManager } = {};
    const pmgr = new PilotManager(session, {
      replaceLost: (_lost, replacement) => late.tmgr?.addPilots([replacement]),
    });
    const tmgr = (late.tmgr = new TaskManager(session));
    let tasks: Task[] = [];
    if (resumed) await session.replay();
    if (stopped === undefined) {
      // a first run killed before it submitted them: the resumed one does
      let pilots = pmgr.list();
      if (pilots.length === 0) {
        pilots = await pmgr.submitPilots(w.pilots ?? [{ resource: 'local' }]);
      }
      tmgr.addPilots(pilots);
      tasks = tmgr.list();
      if (tasks.length === 0 && stopped === undefined) tasks = await tmgr.submitTasks(w.tasks);
    }
    if (tasks.length === 0) tasks = tmgr.list();
    opts.onTasks?.(tasks);
    // timeoutS counts from here (pilots may queue first), for the work and the services' stop together
    const deadline = w.timeoutS !== undefined ? Date.now() + w.timeoutS * 1000 : undefined;
    const left = (): { timeoutMs?: number } =>
      deadline !== undefined ? { timeoutMs: Math.max(deadline - Date.now(), 0) } : {};
    const work = finish(tmgr, tasks, left);
    work.catch(() => undefined); // a run that stops leaves it waiting
    try {
      if (stopped === undefined && (await Promise.race([work, stop])) !== 'stop') {
        return summarize(session.uid, tasks, seconds(), {}, t0);
      }
    } catch (e) {
      if (!(e instanceof TimeoutError)) throw e;
      return summarize(session.uid, tasks, seconds(), { timeoutS: w.timeoutS }, t0);
    }
    // stopped: what has not ended is canceled, then the session's close ends the pilots
    await tmgr.cancelTasks();
    const uids = tasks.map((t) => t.uid);
    await tmgr.waitTasks({ uids, timeoutMs: CANCEL_WAIT_MS }).catch((e: unknown) => {
      if (!(e instanceof TimeoutError)) throw e;
    });
    return summarize(session.uid, tasks, seconds(), { interrupted: stopped }, t0);
  } finally {
    await session.close();
  }
}

/** Waits for the work, then stops the services still serving (they end DONE). */
async function finish(
  tmgr: TaskManager,
  tasks: Task[],
  left: () => { timeoutMs?: number },
): Promise<'done'> {
  await tmgr.waitTasks(left());
  const serving = tasks.filter((t) => t.description.mode === 'service' && !t.final);
  if (serving.length > 0) {
    const uids = serving.map((t) => t.uid);
    await tmgr.cancelTasks(uids);
    await tmgr.waitTasks({ uids, ...left() });
  }
  return 'done';
}
