import type { ModelProfile } from './models';
import { attemptEnd, attemptTimes, PHASES, pilotWindow } from './phases';
import type { AttemptProfile, PilotProfile, Profile, TaskProfile } from './types';
import { utilization, type UtilizationReport } from './utilization';

/** [from, to] in epoch ms. */
export type Interval = [number, number];

/** An attempt's intervals, where it reached them: the phases of utilization.ts, and its wait. */
export interface AttemptIntervals {
  /** Waiting in the agent for slots (AGENT_SCHEDULING_PENDING to allocation). */
  waiting?: Interval;
  scheduling?: Interval;
  launching?: Interval;
  running?: Interval;
  tearingDown?: Interval;
}

/** A pilot's intervals: waiting for its job, starting up, active, draining. */
export interface PilotIntervals {
  waitingForJob?: Interval;
  startUp?: Interval;
  active?: Interval;
  draining?: Interval;
}

export interface ProfileReport {
  session: string;
  readAt: number;
  pilots: (PilotProfile & { intervals: PilotIntervals })[];
  tasks: (Omit<TaskProfile, 'attempts'> & {
    attempts: (AttemptProfile & { intervals: AttemptIntervals })[];
  })[];
  utilization: UtilizationReport;
  /** The models its router ran: each replica's life, the swaps (where it ran one). */
  models?: ModelProfile[];
}

export function attemptIntervals(task: TaskProfile, i: number, readAt: number): AttemptIntervals {
  const t = attemptTimes(task.attempts[i]!, attemptEnd(task, i, readAt));
  const out: AttemptIntervals = {};
  if (t.waiting !== undefined) out.waiting = t.waiting;
  const h = t.hold;
  if (h !== undefined) PHASES.forEach((k, j) => (out[k] = [h[j]!, h[j + 1]!]));
  return out;
}

/**
 * Whether a pilot waits for a batch job before its agent starts: a local pilot has none, its
 * agent is started at once, so the time from its submission is its start-up.
 */
export function waitsForJob(p: PilotProfile): boolean {
  return p.resource !== 'local';
}

export function pilotIntervals(p: PilotProfile, readAt: number): PilotIntervals {
  const w = pilotWindow(p, readAt);
  const submitted = p.states[0]?.ts;
  const job = waitsForJob(p);
  if (w === undefined) {
    if (submitted === undefined) return {};
    return job ? { waitingForJob: [submitted, readAt] } : { startUp: [submitted, readAt] };
  }
  const from = submitted === undefined ? w.start : Math.min(submitted, w.start);
  const out: PilotIntervals = {
    startUp: [job ? w.start : from, w.active],
    active: [w.active, w.drain],
    draining: [w.drain, w.end],
  };
  if (job && submitted !== undefined) out.waitingForJob = [from, w.start];
  return out;
}

/** What `pilotfish profile --json` prints: the profile, each interval, and the utilization. */
export function profileReport(profile: Profile): ProfileReport {
  return {
    session: profile.session,
    readAt: profile.readAt,
    pilots: profile.pilots.map((p) => ({ ...p, intervals: pilotIntervals(p, profile.readAt) })),
    tasks: profile.tasks.map((t) => ({
      ...t,
      attempts: t.attempts.map((a, i) => ({
        ...a,
        intervals: attemptIntervals(t, i, profile.readAt),
      })),
    })),
    utilization: utilization(profile),
    ...(profile.models !== undefined ? { models: profile.models } : {}),
  };
}
