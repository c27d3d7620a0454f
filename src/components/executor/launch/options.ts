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
  if (where.resource === 'slurm') {
    opts.slurm = {
      srun: 'srun',
      node: where.nodeName,
      gpuGres: where.env.SLURM_JOB_GPUS !== undefined || where.env.SLURM_GPUS_ON_NODE !== undefined,
    };
  }
  return opts;
}
