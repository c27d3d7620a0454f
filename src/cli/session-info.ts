import { readFileSync, readlinkSync } from 'node:fs';
import * as path from 'node:path';
import type {
  PilotStatus,
  RunningTask,
  SessionState,
  SessionStatus,
} from '../client/control/protocol';
import type { Explanation } from '../client/tasks/explain';
import { journaledRouterStatus } from '../profile/models';
import { readProfile } from '../profile/read';
import type { Profile, TaskProfile } from '../profile/types';
import { TASK_STATES, type TaskState } from '../states/task-model';
import { ask } from './control-client';

/** What a session's journal says of its life: when it began, and whether its last client closed it. */
export interface JournalLife {
  /** `ended`: the last client closed it; `crashed`: it was opened (or resumed) and never closed. */
  state: 'ended' | 'crashed';
  /** When it was opened (epoch ms, from its uid), where known. */
  started?: number;
  /** When it was closed, if it was. */
  closed?: number;
  /** Tasks submitted (the journal's count). */
  tasks: number;
}

/** Reads `<dir>/journal.jsonl` (read-only): the last of its `closed`/`resumed` marks decides. */
export function journalLife(dir: string): JournalLife {
  let text = '';
  try {
    text = readFileSync(path.join(dir, 'journal.jsonl'), 'utf8');
  } catch {
    // no journal: a session directory half made
  }
  let closed: number | undefined;
  let tasks = 0;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let e: { t?: string; at?: number; tasks?: unknown[] };
    try {
      e = JSON.parse(line) as typeof e;
    } catch {
      continue; // a line being written, or torn by a crash
    }
    if (e.t === 'closed') closed = e.at;
    else if (e.t === 'resumed') closed = undefined;
    else if (e.t === 'tasks') tasks += e.tasks?.length ?? 0;
  }
  const started = startedOf(path.basename(dir));
  return {
    state: closed !== undefined ? 'ended' : 'crashed',
    ...(started !== undefined ? { started } : {}),
    ...(closed !== undefined ? { closed } : {}),
    tasks,
  };
}

/**
 * Local agents of the session that still run: the pids its journal names whose process is an
 * agent of this session still (isAgentOf; a reused pid is not).
 */
export function liveAgents(dir: string): number[] {
  let text: string;
  try {
    text = readFileSync(path.join(dir, 'journal.jsonl'), 'utf8');
  } catch {
    return [];
  }
  const uid = path.basename(dir);
  const pids: number[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('"t":"agent"')) continue;
    let pid: unknown;
    try {
      pid = (JSON.parse(line) as { pid?: unknown }).pid;
    } catch {
      continue;
    }
    if (typeof pid !== 'number') continue;
    if (isAgentOf(pid, uid)) pids.push(pid);
  }
  return pids;
}

/**
 * Whether `pid` is an agent of session `uid`: an agent names only `agent.json` and runs in its
 * pilot's sandbox, where that file (0600) names its session (an agent of an older client named
 * the session on its command line).
 */
function isAgentOf(pid: number, uid: string): boolean {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (args.includes(uid)) return true;
    if (!args.split('\0').includes('agent.json')) return false;
    const config = path.join(readlinkSync(`/proc/${pid}/cwd`), 'agent.json');
    return (JSON.parse(readFileSync(config, 'utf8')) as { session?: unknown }).session === uid;
  } catch {
    return false; // gone, or another user's
  }
}

/** The time in a session uid (pf.YYYYMMDD.HHMMSS.xxxxxx, UTC). */
function startedOf(uid: string): number | undefined {
  const m = /^pf\.(\d{4})(\d{2})(\d{2})\.(\d{2})(\d{2})(\d{2})\./.exec(uid);
  if (m === null) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return Date.UTC(y, mo - 1, d, h, mi, s);
}

/** The session's status: live through its socket, else from its store (read-only). */
export async function statusOf(
  dir: string,
  limits: { pending?: number; running?: number } = {},
): Promise<SessionStatus> {
  const reply = await ask(dir, { op: 'status', ...limits });
  if (reply?.ok === true) return reply.result;
  if (reply?.ok === false) throw new Error(`${dir}: ${reply.error.code}: ${reply.error.message}`);
  return profileStatus(dir, journalLife(dir).state, await readProfile(dir), limits);
}

/** A task's state now in a profile: its last attempt's last state (NEW before any). */
export function stateOf(t: TaskProfile): TaskState {
  const a = t.attempts.at(-1);
  return a?.final ?? a?.states.at(-1)?.state ?? 'NEW';
}

const PENDING = new Set<TaskState>(TASK_STATES.slice(0, TASK_STATES.indexOf('AGENT_EXECUTING')));

/** What `status` shows, for a session that has no live client, from its profile. */
export function profileStatus(
  dir: string,
  state: SessionState,
  profile: Profile,
  limits: { pending?: number; running?: number } = {},
): SessionStatus {
  const counts: Partial<Record<TaskState, number>> = {};
  const running: RunningTask[] = [];
  const pending: Explanation[] = [];
  let runningTotal = 0;
  let pendingTotal = 0;
  for (const t of profile.tasks) {
    const s = stateOf(t);
    counts[s] = (counts[s] ?? 0) + 1;
    if (s === 'AGENT_EXECUTING' && runningTotal++ < (limits.running ?? 20)) {
      const e = explainProfile(t);
      running.push({
        uid: t.uid,
        ...(t.name !== undefined ? { name: t.name } : {}),
        ...(e.pilot !== undefined ? { pilot: e.pilot } : {}),
        ...(e.since !== undefined ? { since: e.since } : {}),
      });
    } else if (PENDING.has(s) && pendingTotal++ < (limits.pending ?? 5)) {
      pending.push(explainProfile(t));
    }
  }
  const pilots: PilotStatus[] = profile.pilots.map((p) => ({
    uid: p.uid,
    state: p.final ?? p.states.at(-1)?.state ?? 'NEW',
    resource: p.resource ?? 'unknown',
    cores: (p.nodes ?? []).reduce((n, x) => n + x.cores, 0),
    gpus: (p.nodes ?? []).reduce((n, x) => n + x.gpus, 0),
    ...(p.reason !== undefined ? { reason: p.reason } : {}),
  }));
  return {
    session: profile.session,
    dir,
    state,
    pilots,
    counts,
    total: profile.tasks.length,
    running,
    runningTotal,
    pending,
    pendingTotal,
    ...(profile.models !== undefined ? { routers: [journaledRouterStatus(profile.models)] } : {}),
  };
}

/** A task's explanation from the store: its state and since when, and how it ended. */
export function explainProfile(t: TaskProfile): Explanation {
  const a = t.attempts.at(-1);
  const state = stateOf(t);
  const since = a?.states.find((s) => s.state === state)?.ts;
  return {
    uid: t.uid,
    ...(t.name !== undefined ? { name: t.name } : {}),
    state,
    attempt: a?.attempt ?? 1,
    ...(a?.pilot !== undefined ? { pilot: a.pilot } : {}),
    ...(since !== undefined ? { since } : {}),
    ...(a?.reason !== undefined && state !== 'DONE' ? { reason: a.reason } : {}),
  };
}
