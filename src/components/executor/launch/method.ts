import type { Reason, TaskDescription, TaskRecord } from '../../../generated';
import { COMPONENTS } from '../../../states/task-model';

/** A launch method's name: the schema's `launch` enum (registry.ts holds one plug-in each). */
export type LaunchMethod = NonNullable<TaskDescription['launch']>;

export type Slot = NonNullable<TaskRecord['slots']>[number];

/** Set once per agent, by launchOptionsFor (options.ts) from the agent's environment. */
export interface LaunchOptions {
  /** The OpenMPI mpirun to run: a path, or a name looked up in PATH. */
  mpirun: string;
  /** The agent runs as root: OpenMPI's mpirun refuses that without --allow-run-as-root. */
  asRoot: boolean;
  /**
   * Set when the agent's allocation spans nodes (a batch job): the agent's own node, whose slots
   * may fork. Then a task without `launch` is forked when it has one rank and its slot is on
   * this node, and started by the allocation's step launcher otherwise. Unset: every slot is on
   * this machine.
   */
  agentNode?: AgentNode;
  /**
   * The allocation's step launcher, srun in a Slurm job (srun.ts). Unset: 'srun' fails the task.
   */
  srun?: SrunOptions;
  /**
   * Where a service on another node of the allocation is reached, by node name (Slurm's
   * NodeAddr). A node missing: its name.
   */
  nodeHosts?: ReadonlyMap<string, string>;
  /**
   * The CPU ids of each node's cores, by node name: core i of a slot on node N is CPU
   * `cpuIds.get(N)[i]`, and each rank is pinned to its slot's CPUs. A node that is missing (the
   * pilot declares more cores there than the machine has) or no map at all: ranks run unpinned.
   */
  cpuIds?: ReadonlyMap<string, readonly number[]>;
  /**
   * Nodes with an executing sub-agent (agent.subAgents): a one-rank task whose slot is on one
   * of them is forked there by that sub-agent, not started by the step launcher.
   */
  subAgentNodes?: ReadonlySet<string>;
  /** The pilot's sandbox: the working directory of tasks that ask for it (`workdir: 'pilot'`). */
  pilotSandbox?: string;
  /** The pilot's agent.taskLimits: the limits of forked tasks that set none (kinds/limits.ts). */
  taskLimits?: TaskLimitDefaults;
}

/** The pilot's agent.taskLimits (schemas/pilot-description.schema.json). */
export interface TaskLimitDefaults {
  memoryMb?: number;
  pids?: number;
  cpus?: boolean;
}

/** The node the agent runs on, in an allocation of several. */
export interface AgentNode {
  /**
   * Its name as the allocation gives it (in Slurm SLURMD_NODENAME, not os.hostname(), which can
   * differ): the node name its slots carry.
   */
  name: string;
  /**
   * Where other nodes reach a service on it (its host name, or its address when that does not
   * resolve): an allocation's node name need not resolve. Unset: its name.
   */
  host?: string;
}

export interface SrunOptions {
  /** The srun to run: a path, or a name looked up in PATH. */
  executable: string;
  /**
   * The allocation's GPUs are Slurm GRES: a step then asks for its GPUs with --gpus-per-task and
   * keeps the CUDA_VISIBLE_DEVICES Slurm gives it. Default false: Slurm is asked for no GPU and
   * each rank's CUDA_VISIBLE_DEVICES is its slot's.
   */
  gpuGres?: boolean;
  /**
   * The PMI plug-in steps start with (`srun --mpi=<mpi>`), chosen per pilot (launch/mpi.ts):
   * 'pmix' for an OpenMPI built without Slurm's PMI. Unset: Slurm's MpiDefault. A task whose
   * `environment` sets SLURM_MPI_TYPE gets that instead.
   */
  mpi?: string;
}

export interface BuildLaunchOptions extends LaunchOptions {
  /** The task sandbox: PF_TASK_SANDBOX, and where launch files (the hostfile) go. */
  workDir: string;
}

/** A small file to write before spawning. */
export interface LaunchFile {
  path: string;
  content: string;
}

/**
 * How a task's ranks start. Pure data: the spawner helper writes `files`, then runs
 * `executable args` with `env` merged over its own environment.
 */
export interface Launch {
  method: LaunchMethod;
  executable: string;
  args: string[];
  /** Overrides merged over the spawner's environment. */
  env: Record<string, string>;
  files: LaunchFile[];
  /**
   * What a kill signals: unset, the task's process group and session (fork, mpirun); 'process',
   * the launcher alone (srun: its shepherd child must survive it to cancel the step).
   */
  killScope?: 'process';
  /**
   * fork: the CPUs (a cpulist, `0-3,8`) the spawner pins the process to. Launchers pin their
   * ranks themselves, in the rank wrapper.
   */
  cpus?: string;
}

export type LaunchResult = { ok: true; launch: Launch } | { ok: false; reason: Reason };

/** What a method builds from: the task, its rank count, and the env with the PF_* basics set. */
export interface LaunchInput {
  task: TaskRecord;
  ranks: number;
  /** A fresh copy of the task's environment plus PF_TASK_ID … PF_RANKS; the method owns it. */
  env: Record<string, string>;
  opts: BuildLaunchOptions;
}

/** One launch method (one file each, listed in registry.ts). Pure: no I/O. */
export interface LaunchMethodPlugin {
  readonly name: LaunchMethod;
  /**
   * Whether a task that names no method gets this one, asked in registry order (DEFAULT_ORDER):
   * also where the method applies at all (srun only inside a Slurm allocation).
   */
  suits(task: TaskRecord, ranks: number, opts: LaunchOptions): boolean;
  /** The command line, files and kill scope; or why this task cannot start this way. */
  build(input: LaunchInput): LaunchResult;
}

export function launchFailure(
  code: Reason['code'],
  message: string,
  detail: Record<string, unknown>,
): LaunchResult {
  return { ok: false, reason: { code, message, component: COMPONENTS.executor, detail } };
}
