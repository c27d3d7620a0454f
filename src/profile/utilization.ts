import { accountPilot } from './pilot-account';
import type { Profile } from './types';

/**
 * Where a pilot's core-seconds (and GPU-seconds) went, as RADICAL-Pilot's analytics account
 * them: every second of every core between the pilot's job start and its end is in exactly one
 * bucket. docs/profiling.md defines each.
 */
export const BUCKETS = [
  'startUp',
  'scheduling',
  'launching',
  'running',
  'tearingDown',
  'idlePlan',
  'idleOverhead',
  'draining',
] as const;
export type Bucket = (typeof BUCKETS)[number];

/** Seconds of one resource (core- or GPU-seconds): the total and each bucket's share. */
export type Account = { total: number } & Record<Bucket, number>;

export interface PilotUtilization {
  pilot: string;
  /** The accounted window (epoch ms): job start (else PMGR_ACTIVE_PENDING) to its end (else readAt). */
  start: number;
  end: number;
  /** Its nodes, read off its tasks' slots where the profile did not list them (`nodesInferred`). */
  nodes: number;
  nodesInferred: boolean;
  cores: number;
  gpus: number;
  coreSeconds: Account;
  gpuSeconds: Account;
  /** running / total core-seconds; null where the total is 0. */
  utilization: number | null;
  /** running / (total - idlePlan - startUp - draining): QCG-PilotJob's efficiency. */
  efficiency: number | null;
  gpuUtilization: number | null;
  gpuEfficiency: number | null;
  /** The buckets add up to the total (relative error at most 1e-9). */
  check: { ok: boolean; relError: number };
}

export interface UtilizationReport {
  session: string;
  pilots: PilotUtilization[];
  /** Every pilot together. */
  all: Pick<
    PilotUtilization,
    | 'cores'
    | 'gpus'
    | 'coreSeconds'
    | 'gpuSeconds'
    | 'utilization'
    | 'efficiency'
    | 'gpuUtilization'
    | 'gpuEfficiency'
    | 'check'
  >;
}

export function emptyAccount(): Account {
  const a = { total: 0 } as Account;
  for (const b of BUCKETS) a[b] = 0;
  return a;
}

/** utilization, efficiency and the sum check of an account. */
export function ratios(a: Account): {
  utilization: number | null;
  efficiency: number | null;
  relError: number;
} {
  const ratio = (x: number, y: number): number | null => (y > 0 ? x / y : null);
  const sum = BUCKETS.reduce((s, b) => s + a[b], 0);
  const relError = a.total > 0 ? Math.abs(sum - a.total) / a.total : Math.abs(sum);
  const lost = a.total - a.idlePlan - a.startUp - a.draining;
  return { utilization: ratio(a.running, a.total), efficiency: ratio(a.running, lost), relError };
}

export const SUM_TOLERANCE = 1e-9;

/** Builds the per-pilot report from its core and GPU accounts. */
export function pilotReport(
  base: Omit<
    PilotUtilization,
    'utilization' | 'efficiency' | 'gpuUtilization' | 'gpuEfficiency' | 'check'
  >,
): PilotUtilization {
  const c = ratios(base.coreSeconds);
  const g = ratios(base.gpuSeconds);
  const relError = Math.max(c.relError, g.relError);
  return {
    ...base,
    utilization: c.utilization,
    efficiency: c.efficiency,
    gpuUtilization: g.utilization,
    gpuEfficiency: g.efficiency,
    check: { ok: relError <= SUM_TOLERANCE, relError },
  };
}

function addInto(to: Account, from: Account): void {
  to.total += from.total;
  for (const b of BUCKETS) to[b] += from[b];
}

/** The utilization report of every pilot in a profile (a pure function of the profile). */
export function utilization(profile: Profile): UtilizationReport {
  const pilots = profile.pilots.map((p) => accountPilot(profile, p));
  const coreSeconds = emptyAccount();
  const gpuSeconds = emptyAccount();
  for (const p of pilots) {
    addInto(coreSeconds, p.coreSeconds);
    addInto(gpuSeconds, p.gpuSeconds);
  }
  const all = pilotReport({
    pilot: '',
    start: 0,
    end: 0,
    nodes: 0,
    nodesInferred: false,
    cores: pilots.reduce((n, p) => n + p.cores, 0),
    gpus: pilots.reduce((n, p) => n + p.gpus, 0),
    coreSeconds,
    gpuSeconds,
  });
  return {
    session: profile.session,
    pilots,
    all: {
      cores: all.cores,
      gpus: all.gpus,
      coreSeconds,
      gpuSeconds,
      utilization: all.utilization,
      efficiency: all.efficiency,
      gpuUtilization: all.gpuUtilization,
      gpuEfficiency: all.gpuEfficiency,
      check: all.check,
    },
  };
}
