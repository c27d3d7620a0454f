import { lstatSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import type { SessionState } from '../client/control/protocol';
import { readProfile } from '../profile/read';
import type { TaskState } from '../states/task-model';
import { ask } from './control-client';
import { journalLife, stateOf } from './session-info';

/** How long `sessions` and `clean` wait for a session's client to answer. */
export const SURVEY_ANSWER_MS = 3_000;

/** One session as `pilotfish sessions` lists it. */
export interface SessionSummary {
  uid: string;
  dir: string;
  state: SessionState;
  /** When it was opened and, if it was, closed (epoch ms). */
  started?: number;
  closed?: number;
  /** The client's process, while live. */
  pid?: number;
  tasks: number;
  counts: Partial<Record<TaskState, number>>;
}

/** A session's state and task counts: from its client while live, else its journal and store. */
export async function surveySession(dir: string): Promise<SessionSummary> {
  const life = journalLife(dir);
  const uid = path.basename(dir);
  const times = {
    ...(life.started !== undefined ? { started: life.started } : {}),
    ...(life.closed !== undefined ? { closed: life.closed } : {}),
  };
  const reply = await ask(dir, { op: 'status', pending: 0, running: 0 }, SURVEY_ANSWER_MS);
  if (reply?.ok === true) {
    const st = reply.result;
    return {
      uid,
      dir,
      state: st.state,
      ...(life.started !== undefined ? { started: life.started } : {}),
      ...(st.pid !== undefined ? { pid: st.pid } : {}),
      tasks: st.total,
      counts: st.counts,
    };
  }
  const counts: Partial<Record<TaskState, number>> = {};
  let tasks = life.tasks;
  try {
    const profile = await readProfile(dir);
    for (const t of profile.tasks) {
      const s = stateOf(t);
      counts[s] = (counts[s] ?? 0) + 1;
    }
    tasks = profile.tasks.length;
  } catch {
    // a store that cannot be read: the journal's count stands
  }
  return { uid, dir, state: life.state, ...times, tasks, counts };
}

/** Bytes a directory tree takes on disk (its blocks), not following links. */
export function diskUsage(target: string): number {
  const st = lstatSync(target, { throwIfNoEntry: false });
  if (st === undefined) return 0;
  let bytes = st.blocks * 512;
  if (st.isDirectory()) {
    for (const name of readdirSync(target)) bytes += diskUsage(path.join(target, name));
  }
  return bytes;
}

/** `12.3 MiB`. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}
