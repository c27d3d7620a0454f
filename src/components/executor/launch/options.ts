import type { LaunchOptions } from './method';

export interface LaunchEnvironment {
  /** The pilot's resource kind (AgentConfig.resource); 'slurm' runs inside an allocation. */
  resource: string | undefined;
  /** The agent's environment (process.env). */
  env: Readonly<Record<string, string | undefined>>;
  /** The agent's user id (process.getuid()); undefined where there is none. */
  uid: number | undefined;
  /** The agent's node, as its scheduler names the slots there (SLURMD_NODENAME under Slurm). */
  nodeName: string;
  /** Where other nodes reach the agent's node (resources/service-host.ts). */
  hostName?: string;
  /** Under Slurm: the PMI plug-in of the pilot's steps (chooseMpi, mpi.ts); unset: Slurm's. */
  mpi?: string | undefined;
  /** The CPU ids of each node's cores, for pinning (LaunchOptions.cpuIds); unset: unpinned. */
  cpuIds?: ReadonlyMap<string, readonly number[]> | undefined;
}

/**
 * The launch options of an agent, from where it runs. Pure: the agent's wiring passes its
 * environment, so adding a method that needs a setting changes this file, not agent.ts.
 */
export function launchOptionsFor(where: LaunchEnvironment): LaunchOptions {
  const opts: LaunchOptions = {
    mpirun: 'mpirun',
    // OpenMPI's mpirun refuses to run as root without --allow-run-as-root.
    asRoot: where.uid === 0,
  };
  if (where.cpuIds !== undefined) opts.cpuIds = where.cpuIds;
  if (where.resource === 'slurm') {
    opts.slurm = {
      srun: 'srun',
      node: where.nodeName,
      gpuGres: where.env.SLURM_JOB_GPUS !== undefined || where.env.SLURM_GPUS_ON_NODE !== undefined,
    };
    if (where.mpi !== undefined) opts.slurm.mpi = where.mpi;
    if (where.hostName !== undefined) opts.slurm.host = where.hostName;
  }
  return opts;
}
