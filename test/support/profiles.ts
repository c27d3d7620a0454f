import type { PilotState } from '../../src/states/pilot-model';
import type { TaskState } from '../../src/states/task-model';
import type {
  AttemptProfile,
  PilotNode,
  PilotProfile,
  SlotProfile,
  TaskProfile,
} from '../../src/profile/types';

/** Seconds to the epoch ms a profile holds, from an arbitrary origin. */
export const T0 = 1_700_000_000_000;
export const s = (sec: number): number => T0 + sec * 1000;

/** A pilot: job start, active, drain and end in seconds (end omitted: still active). */
export function pilot(
  uid: string,
  nodes: PilotNode[] | undefined,
  at: { job?: number; pending?: number; active?: number; drain?: number; end?: number },
): PilotProfile {
  const states: { state: PilotState; ts: number }[] = [];
  if (at.pending !== undefined) states.push({ state: 'PMGR_ACTIVE_PENDING', ts: s(at.pending) });
  if (at.active !== undefined) states.push({ state: 'PMGR_ACTIVE', ts: s(at.active) });
  const p: PilotProfile = { uid, resource: 'local', states };
  if (nodes !== undefined) p.nodes = nodes;
  if (at.job !== undefined) p.jobStarted = s(at.job);
  if (at.drain !== undefined) p.drainStarted = s(at.drain);
  if (at.end !== undefined) {
    states.push({ state: 'DONE', ts: s(at.end) });
    p.final = 'DONE';
  }
  return p;
}

/** The instants of an attempt in seconds; any may be left out. */
export interface AttemptAt {
  wait?: number; // AGENT_SCHEDULING_PENDING
  alloc?: number; // AGENT_EXECUTING_PENDING
  exec?: number; // AGENT_EXECUTING
  launched?: number;
  exited?: number;
  release?: number; // AGENT_STAGING_OUTPUT_PENDING
  end?: number; // final state
}

export function attempt(
  pilotUid: string,
  at: AttemptAt,
  slots: SlotProfile[] | undefined,
  final: TaskState = 'DONE',
  n = 1,
): AttemptProfile {
  const states: { state: TaskState; ts: number }[] = [];
  const add = (state: TaskState, t: number | undefined): void => {
    if (t !== undefined) states.push({ state, ts: s(t) });
  };
  add('AGENT_SCHEDULING_PENDING', at.wait);
  add('AGENT_EXECUTING_PENDING', at.alloc);
  add('AGENT_EXECUTING', at.exec);
  add('AGENT_STAGING_OUTPUT_PENDING', at.release);
  add(final, at.end);
  const a: AttemptProfile = { attempt: n, pilot: pilotUid, states };
  if (at.end !== undefined) a.final = final;
  if (slots !== undefined) a.slots = slots;
  if (at.launched !== undefined) a.launched = s(at.launched);
  if (at.exited !== undefined) a.exited = s(at.exited);
  return a;
}

export function task(uid: string, ...attempts: AttemptProfile[]): TaskProfile {
  return { uid, name: uid, mode: 'executable', attempts };
}

export const cores = (node: string, ...c: number[]): SlotProfile => ({ node, cores: c, gpus: [] });
