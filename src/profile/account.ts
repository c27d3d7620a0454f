/**
 * A pilot's account of its core-seconds (and GPU-seconds), bucket by bucket, and the report made
 * from it: the types and the sums that utilization.ts (the public face) and pilot-account.ts
 * (the sweep over one pilot) both use.
 */

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
