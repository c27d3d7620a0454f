import type { AgentConfig } from '../../generated';
import type { NodeResources } from '../../components/agent-scheduler/node-state';
import type { AllocationLaunchOptions } from '../../components/executor/launch';
import type { Logger } from '../../lib/logger';

/**
 * How long before its allocation's end (Allocation.jobEnd) the agent ends the pilot itself:
 * time for its shutdown (tasks killed, notifications flushed) before the batch system kills the
 * job.
 */
export const JOB_END_MARGIN_MS = 60_000;

/** The batch systems an agent can run in: the agent config's `resource` (unset: local). */
export type AllocationKind = NonNullable<AgentConfig['resource']>;

/**
 * Where an agent runs, as read once at its start: its config and what the process sees
 * (registry.ts reads them from the process; tests give recorded ones).
 */
export interface AllocationSite {
  cfg: AgentConfig;
  /** The agent's environment (process.env): a batch system's job variables are there. */
  env: NodeJS.ProcessEnv;
  /** This machine's host name (os.hostname()). */
  hostname: string;
  /** This machine's memory in MiB (os.totalmem()). */
  memMb: number;
}

/** What an allocation's launch settings are found with (a probe may run commands). */
export interface LaunchProbe {
  log: Logger;
  /** Bound on each command a probe runs. */
  timeoutMs: number;
}

/** What an allocation adds to how tasks start, and what the user must know of it. */
export interface AllocationLaunch {
  /**
   * Its part of the launch options (LaunchOptions): the launch methods it offers beyond fork
   * and mpirun (a step launcher such as srun) and which one a task that names none gets.
   */
  options: AllocationLaunchOptions;
  /** What the user must know about how tasks start here, already logged (warn). */
  warnings: string[];
}

/**
 * What the agent needs from the allocation it runs in, read once at its start from the
 * registry (registry.ts): the agent never asks which batch system it is in (HyperQueue's
 * worker reads one `ManagerInfo` the same way). One file per batch system implements it:
 * local-allocation.ts, slurm-allocation.ts.
 */
export interface Allocation {
  /** The node the agent runs on, as the allocation names it: the name its slots carry. */
  readonly node: string;
  /** The nodes the agent holds, with the cores, GPUs and memory its tasks may use on each. */
  readonly nodes: readonly NodeResources[];
  /**
   * When the allocation ends (epoch ms), undefined when it does not or cannot say; what kept it
   * from saying goes to `warn`, for the user.
   */
  jobEnd(warn: (message: string) => void): Promise<number | undefined>;
  /** How tasks start here, found once at start (off the tasks' path), each finding logged. */
  launch(probe: LaunchProbe): Promise<AllocationLaunch>;
}
