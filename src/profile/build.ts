import type { Notification, TaskDescription } from '../generated';
import { isFinalState } from '../states/model';
import { passedStates } from '../states/passed';
import { PILOT_MODEL, type PilotState } from '../states/pilot-model';
import { TASK_MODEL, type TaskState } from '../states/task-model';
import { modelProfiles, type RouterEntry } from './models';
import type { AttemptProfile, PilotNode, PilotProfile, Profile, Stamp, TaskProfile } from './types';

/** What a session's journal says that its store does not: descriptions and the agents' nodes. */
export interface SessionFacts {
  tasks: Map<string, TaskDescription>;
  pilots: Map<string, { resource?: string; nodes?: PilotNode[]; sandbox?: string }>;
  /** What its model routers did, in journal order (absent or empty: it ran none). */
  router?: RouterEntry[];
}

/**
 * A session's profile from its notifications (any order, duplicates allowed) and its journal's
 * facts. Pure: `readProfile` reads both from a session directory.
 */
export function buildProfile(
  session: string,
  notifications: readonly Notification[],
  facts: SessionFacts,
  readAt: number,
): Profile {
  const tasks = new Map<string, Map<number, AttemptProfile>>();
  const pilots = new Map<string, PilotProfile>();
  for (const n of notifications) {
    if (n.kind === 'task') addTaskNote(tasks, n);
    else if (n.kind === 'pilot') addPilotNote(pilots, n);
  }
  for (const [uid, f] of facts.pilots) {
    const p = pilots.get(uid) ?? { uid, states: [] };
    if (f.resource !== undefined) p.resource = f.resource;
    if (f.nodes !== undefined) p.nodes = f.nodes;
    pilots.set(uid, p);
  }
  for (const p of pilots.values()) finishStamps(p.states, PILOT_RANK);
  const out: TaskProfile[] = [];
  for (const [uid, attempts] of tasks) {
    const d = facts.tasks.get(uid);
    const list = [...attempts.values()].sort((a, b) => a.attempt - b.attempt);
    for (const a of list) {
      finishStamps(a.states, TASK_RANK);
      if (d?.mode === 'function') callTimes(a);
    }
    out.push({
      uid,
      ...(d?.name !== undefined ? { name: d.name } : {}),
      mode: d?.mode ?? 'executable',
      attempts: list,
    });
  }
  // tasks the journal has and the store not yet (submitted a moment ago)
  for (const [uid, d] of facts.tasks) {
    if (tasks.has(uid)) continue;
    out.push({
      uid,
      ...(d.name !== undefined ? { name: d.name } : {}),
      mode: d.mode ?? 'executable',
      attempts: [],
    });
  }
  const models = modelProfiles(facts.router ?? []);
  return {
    session,
    readAt,
    pilots: [...pilots.values()],
    tasks: out,
    ...(models.length > 0 ? { models } : {}),
  };
}

function addTaskNote(tasks: Map<string, Map<number, AttemptProfile>>, n: Notification): void {
  let attempts = tasks.get(n.uid);
  if (attempts === undefined) tasks.set(n.uid, (attempts = new Map<number, AttemptProfile>()));
  let a = attempts.get(n.attempt);
  if (a === undefined) attempts.set(n.attempt, (a = { attempt: n.attempt, states: [] }));
  const state = n.state as TaskState;
  a.states.push({ state, ts: n.ts });
  const d = n.detail;
  if (d === undefined) return;
  if (d.passed !== undefined) {
    for (const [s, ts] of passedStates(n)) a.states.push({ state: s as TaskState, ts });
  }
  if (d.pilot !== undefined) a.pilot = d.pilot;
  if (d.slots !== undefined) a.slots = d.slots;
  if (d.launched !== undefined) a.launched = d.launched;
  if (d.exited !== undefined) a.exited = d.exited;
  if (d.follows !== undefined) a.follows = d.follows;
  if (d.followed === true) a.followed = true;
  if (d.exitCode !== undefined) a.exitCode = d.exitCode;
  if (isFinalState(state)) {
    a.final = state;
    if (d.reason !== undefined) a.reason = d.reason;
  }
}

function addPilotNote(pilots: Map<string, PilotProfile>, n: Notification): void {
  let p = pilots.get(n.uid);
  if (p === undefined) pilots.set(n.uid, (p = { uid: n.uid, states: [] }));
  const state = n.state as PilotState;
  p.states.push({ state, ts: n.ts });
  const d = n.detail;
  if (d?.jobStarted !== undefined) p.jobStarted = d.jobStarted;
  if (d?.drainStarted !== undefined) p.drainStarted = d.drainStarted;
  if (isFinalState(state)) {
    p.final = state;
    if (d?.reason !== undefined) p.reason = d.reason;
  }
}

const rankMap = (states: readonly string[]): Map<string, number> =>
  new Map(states.map((s, i) => [s, i]));
const TASK_RANK = rankMap(TASK_MODEL.states);
const PILOT_RANK = rankMap(PILOT_MODEL.states);

/** Sorts stamps into model order and keeps one per state (the earliest, if told twice). */
function finishStamps<S extends string>(stamps: Stamp<S>[], rank: Map<string, number>): void {
  stamps.sort((x, y) => rank.get(x.state)! - rank.get(y.state)! || x.ts - y.ts);
  let w = 0;
  for (let r = 0; r < stamps.length; r++) {
    if (w > 0 && stamps[w - 1]!.state === stamps[r]!.state) continue;
    stamps[w++] = stamps[r]!;
  }
  stamps.length = w;
}

/**
 * A function call's start and end are its AGENT_EXECUTING and AGENT_STAGING_OUTPUT_PENDING:
 * the agent sends the call and takes its outcome in the same turns as it sets those states.
 */
function callTimes(a: AttemptProfile): void {
  for (const s of a.states) {
    if (s.state === 'AGENT_EXECUTING') a.launched ??= s.ts;
    else if (s.state === 'AGENT_STAGING_OUTPUT_PENDING') a.exited ??= s.ts;
  }
}
