import { watch } from 'node:fs';
import type { Notification, TaskDescription } from '../generated';
import type { OutputSource, TaskView } from '../client/tasks/output';
import { chooseFiles } from '../lib/sandbox-files';
import { readNotifications, readSessionFacts } from '../profile/read';
import { isFinalTaskState, type TaskState } from '../states/task-model';
import { sessionFiles } from './session-files';

/** At most this often a follower reads the store again while the session writes it. */
const STORE_LOOK_MS = 500;
/** And at least this often (a store on a file system whose writes inotify does not see). */
const STORE_RECHECK_MS = 5_000;

/**
 * Where `pilotfish tail` learns about a task: the session's store and journal, read-only
 * (readNotifications), so a live session and a finished one alike. The sandbox is the one
 * the notifications name (`detail.sandbox`), else its pilot's once they say where its output
 * goes (`detail.output`, sent with the sandbox). Read where this machine sees it, else through
 * the live session (sessionFiles). Undefined for a task the session does not have.
 */
export function storeOutputSource(
  sessionDir: string,
  uid: string,
): { source: OutputSource; description: TaskDescription } | undefined {
  const journal = readSessionFacts(sessionDir);
  const description = journal.tasks.get(uid);
  if (description === undefined) return undefined;
  let seen: TaskView | undefined;
  let lastRead = 0;
  let dirty = true;
  const look = async (): Promise<TaskView> => {
    const mine = (await readNotifications(sessionDir)).filter(
      (n) => n.kind === 'task' && n.uid === uid,
    );
    const view = viewOf(
      mine,
      (pilot) =>
        journal.pilots.get(pilot)?.sandbox ??
        readSessionFacts(sessionDir).pilots.get(pilot)?.sandbox,
    );
    // a function call's output is framed into its pilot's stream files (what it printed)
    if (description.mode === 'function') view.output = 'stream';
    return view;
  };
  const source: OutputSource = {
    uid,
    now: async () => {
      if (seen === undefined || dirty || Date.now() - lastRead > STORE_RECHECK_MS) {
        dirty = false;
        lastRead = Date.now();
        seen = await look();
      }
      return seen;
    },
    // where this machine does not see the sandbox, the live session reads it through the agent
    files: (pilot, dir) =>
      chooseFiles(dir, pilot === undefined ? undefined : sessionFiles(sessionDir, pilot)),
    watch: (wake) => {
      // the store's files change with every batch: look again at most every STORE_LOOK_MS
      let timer: NodeJS.Timeout | undefined;
      const w = watch(sessionDir, () => {
        timer ??= setTimeout(() => {
          timer = undefined;
          dirty = true;
          wake();
        }, STORE_LOOK_MS);
      });
      w.on('error', () => undefined); // the recheck goes on
      return () => {
        w.close();
        clearTimeout(timer);
      };
    },
  };
  return { source, description };
}

/**
 * The view of every task with notifications in `notes` (store order), by uid: for a reader of
 * many tasks' output (`pilotfish logs`), from one read of the store.
 */
export function viewsOf(
  notes: Notification[],
  pilotSandbox: (pilot: string) => string | undefined,
): Map<string, TaskView> {
  const byTask = new Map<string, Notification[]>();
  for (const n of notes) {
    if (n.kind !== 'task') continue;
    const mine = byTask.get(n.uid);
    if (mine === undefined) byTask.set(n.uid, [n]);
    else mine.push(n);
  }
  const views = new Map<string, TaskView>();
  for (const [uid, mine] of byTask) views.set(uid, viewOf(mine, pilotSandbox));
  return views;
}

/**
 * The task's sandbox, its pilot's, its attempt and whether it ended, from its notifications in
 * store order.
 */
function viewOf(
  notes: Notification[],
  pilotSandbox: (pilot: string) => string | undefined,
): TaskView {
  let attempt = 0;
  let sandbox: string | undefined;
  let pilot: string | undefined;
  let final = false;
  let output: TaskView['output'];
  for (const n of notes) {
    if (n.attempt < attempt) continue;
    if (n.attempt > attempt) {
      // a new attempt: it runs elsewhere, or in a sandbox made again
      attempt = n.attempt;
      [sandbox, pilot, output] = [undefined, undefined, undefined];
    }
    const state = n.state as TaskState;
    if (isFinalTaskState(state)) final = true;
    if (n.detail?.sandbox !== undefined) sandbox = n.detail.sandbox;
    if (n.detail?.pilot !== undefined) pilot = n.detail.pilot;
    if (n.detail?.output !== undefined) output = n.detail.output;
  }
  const pilotDir = pilot === undefined ? undefined : pilotSandbox(pilot);
  // the detail that says where its output goes names its sandbox if it has one of its own
  if (sandbox === undefined && output !== undefined) sandbox = pilotDir;
  const view: TaskView = {
    sandbox,
    final,
    pilotSandbox: pilotDir,
    pilot,
    attempt: Math.max(attempt, 1),
  };
  if (output !== undefined) view.output = output;
  return view;
}
