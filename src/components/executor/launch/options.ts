import type { LaunchOptions } from './method';

/**
 * What the allocation the agent runs in sets in its launch options, every option but the
 * machine's own: the step launcher it offers, if any (srun then applies, and is the default for
 * a task off the agent's node). The agent's allocation decides it (src/agent/resources/,
 * Allocation.launch).
 */
export type AllocationLaunchOptions = Omit<LaunchOptions, 'mpirun' | 'asRoot' | 'cpuIds'>;

export interface LaunchEnvironment {
  /** The agent's user id (process.getuid()); undefined where there is none. */
  uid: number | undefined;
  /** The CPU ids of each node's cores, for pinning (LaunchOptions.cpuIds); unset: unpinned. */
  cpuIds?: ReadonlyMap<string, readonly number[]> | undefined;
  /** What the allocation adds (its step launcher); unset or empty: fork and mpirun only. */
  allocation?: AllocationLaunchOptions;
}

/**
 * The launch options of an agent, from where it runs. Pure: the agent's wiring passes what it
 * found, so adding a method that needs a setting changes this file or the allocation's, not
 * agent.ts.
 */
export function launchOptionsFor(where: LaunchEnvironment): LaunchOptions {
  const opts: LaunchOptions = {
    mpirun: 'mpirun',
    // OpenMPI's mpirun refuses to run as root without --allow-run-as-root.
    asRoot: where.uid === 0,
  };
  if (where.cpuIds !== undefined) opts.cpuIds = where.cpuIds;
  return where.allocation === undefined ? opts : { ...where.allocation, ...opts };
}
