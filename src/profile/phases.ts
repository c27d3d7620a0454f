import type { PilotState } from '../states/pilot-model';
import type { TaskState } from '../states/task-model';
import type { AttemptProfile, PilotProfile, Stamp, TaskProfile } from './types';

/** The time a state was entered, if it was. */
export function stampOf<S extends string>(
  states: readonly Stamp<S>[],
  state: S,
): number | undefined {
  for (const s of states) if (s.state === state) return s.ts;
  return undefined;
}

/**
 * The instants that bound an attempt's hold on its slots, in order: allocated
 * (AGENT_EXECUTING_PENDING), executing (AGENT_EXECUTING), launched, exited and released
 * (AGENT_STAGING_OUTPUT_PENDING, else the attempt's end). The phases between them are
 * scheduling, launching, running and tearing down. A follow-on start holds its slots from its
 * launch, and the task it followed gives them up at its exit.
 */
export type HoldTimes = [number, number, number, number, number];

export const PHASES = ['scheduling', 'launching', 'running', 'tearingDown'] as const;
export type Phase = (typeof PHASES)[number];

/** What an attempt's own states say about when it waited and held its slots. */
export interface AttemptTimes {
  /** [AGENT_SCHEDULING_PENDING, slots allocated]: waiting in the agent for slots. */
  waiting?: [number, number];
  /** Absent where it never held slots (or no instant of its hold is known). */
  hold?: HoldTimes;
  /** Its final state's time, else when it was superseded by a retry, else the profile's readAt. */
  end: number;
}

/**
 * The end of attempt `i` of `task`: its final state's time; one that was retried without a
 * final state ended when the next attempt began; one still going ends at `readAt`.
 */
export function attemptEnd(task: TaskProfile, i: number, readAt: number): number {
  const a = task.attempts[i]!;
  const last = a.states[a.states.length - 1];
  if (a.final !== undefined) return stampOf(a.states, a.final) ?? last?.ts ?? readAt;
  const next = task.attempts[i + 1]?.states[0]?.ts;
  return next ?? readAt;
}

/** Where scanAttempt keeps a state's time (-1, -2: the two starts of waiting). */
const SLOT_OF_STATE = new Map<TaskState, number>([
  ['AGENT_SCHEDULING_PENDING', -1],
  ['AGENT_SCHEDULING', -2],
  ['AGENT_EXECUTING_PENDING', 2],
  ['AGENT_EXECUTING', 3],
  ['AGENT_STAGING_OUTPUT_PENDING', 6],
]);

/** scanAttempt's flags: it waited in the agent; it held slots. */
export const WAITED = 1;
export const HELD = 2;

/**
 * Writes an attempt's waiting interval and hold instants into `out` (7 numbers: waiting from,
 * to, then HoldTimes) without allocating, for the sweep over a million attempts; returns
 * WAITED | HELD for what it found. A missing instant takes the next known one (the phase before
 * it stretches to cover it), a missing release takes `end`; instants are made non-decreasing so
 * that phases never overlap. Waiting ends where the hold begins.
 */
export function scanAttempt(a: AttemptProfile, end: number, out: Float64Array): number {
  let waitFrom = NaN;
  let sched = NaN;
  out.fill(NaN);
  for (const s of a.states) {
    const k = SLOT_OF_STATE.get(s.state);
    if (k === -1) waitFrom = s.ts;
    else if (k === -2) sched = s.ts;
    else if (k !== undefined) out[k] = s.ts;
  }
  if (a.launched !== undefined) out[4] = a.launched;
  if (a.exited !== undefined) out[5] = a.exited;
  if (Number.isNaN(out[6])) out[6] = end;
  // slots passed on between follow-on starts (the helper's hand-over, not the agent's states)
  if (a.follows !== undefined && a.launched !== undefined) out[2] = out[3] = a.launched;
  if (a.followed === true && a.exited !== undefined) out[6] = a.exited;
  const allocated = out[2]!;
  let flags = 0;
  if (a.slots !== undefined && a.slots.length > 0 && !noneKnown(out)) {
    for (let k = 5; k >= 2; k--) if (Number.isNaN(out[k])) out[k] = out[k + 1]!;
    for (let k = 3; k < 7; k++) if (out[k]! < out[k - 1]!) out[k] = out[k - 1]!;
    flags |= HELD;
  }
  if (Number.isNaN(waitFrom)) waitFrom = sched;
  if (!Number.isNaN(waitFrom)) {
    const waitTo = flags & HELD ? out[2]! : Number.isNaN(allocated) ? end : allocated;
    out[0] = waitFrom;
    out[1] = Math.max(waitFrom, waitTo);
    flags |= WAITED;
  }
  return flags;
}

/** True where none of allocated, executing, launched and exited is known. */
function noneKnown(out: Float64Array): boolean {
  for (let k = 2; k < 6; k++) if (!Number.isNaN(out[k])) return false;
  return true;
}

const scratch = new Float64Array(7);

/** The waiting interval and the hold instants of an attempt that ends at `end` (see scanAttempt). */
export function attemptTimes(a: AttemptProfile, end: number): AttemptTimes {
  const flags = scanAttempt(a, end, scratch);
  const t: AttemptTimes = { end };
  if (flags & WAITED) t.waiting = [scratch[0]!, scratch[1]!];
  if (flags & HELD) t.hold = [scratch[2]!, scratch[3]!, scratch[4]!, scratch[5]!, scratch[6]!];
  return t;
}

/** The cores and GPUs an attempt needs on one node: the most its slots took on any node. */
export function needOf(a: AttemptProfile): { cores: number; gpus: number } | undefined {
  if (a.slots === undefined || a.slots.length === 0) return undefined;
  let cores = 0;
  let gpus = 0;
  for (const s of a.slots) {
    cores = Math.max(cores, s.cores.length);
    gpus = Math.max(gpus, s.gpus.length);
  }
  return { cores, gpus };
}

/** A pilot's accounted window and the instants inside it (all clipped to the window). */
export interface PilotWindow {
  /** Job start, else PMGR_ACTIVE_PENDING, else PMGR_ACTIVE. */
  start: number;
  /** Final state's time, else readAt. */
  end: number;
  /** PMGR_ACTIVE (agent ready), else the end. */
  active: number;
  /** Drain start, else the end. */
  drain: number;
}

/** The window of a pilot, or undefined where its job never started (no core-second to account). */
export function pilotWindow(p: PilotProfile, readAt: number): PilotWindow | undefined {
  const ts = (s: PilotState): number | undefined => stampOf(p.states, s);
  const from = p.jobStarted ?? ts('PMGR_ACTIVE_PENDING') ?? ts('PMGR_ACTIVE');
  if (from === undefined) return undefined;
  const finalTs = p.final !== undefined ? ts(p.final) : undefined;
  const end = Math.max(from, finalTs ?? readAt);
  const clip = (t: number | undefined): number => Math.min(Math.max(t ?? end, from), end);
  const active = clip(ts('PMGR_ACTIVE'));
  return { start: from, end, active, drain: Math.max(active, clip(p.drainStarted)) };
}
