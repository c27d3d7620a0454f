import {
  emptyAccount,
  pilotReport,
  BUCKETS,
  type Account,
  type UtilizationReport,
} from './account';
import { accountPilot } from './pilot-account';
import type { Profile } from './types';

// the public names of the account (index.ts and the CLI read them here)
export {
  BUCKETS,
  type Account,
  type Bucket,
  type PilotUtilization,
  type UtilizationReport,
} from './account';

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
