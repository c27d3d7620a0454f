/* Generated from schemas/workload.schema.json by scripts/gen-types.js: do not edit. */

/**
 * What `pilotfish run FILE` runs: pilots, then tasks.
 */
export interface Workload {
  /**
   * @minItems 1
   */
  pilots?: [PilotDescription, ...PilotDescription[]];
  tasks: TaskDescription[];
  timeoutS?: number;
}
/**
 * A placeholder job that holds resources for tasks.
 */
export interface PilotDescription {
  uid?: string;
  /**
   * Where the pilot runs: a child process here, or a job of a batch system.
   */
  resource: 'local' | 'slurm' | 'pbs' | 'lsf';
  /**
   * Cores the pilot holds: local, defaults to every core of the machine; batch, cores in all (when `nodes` is not given).
   */
  cores?: number;
  /**
   * GPUs per node.
   */
  gpus?: number;
  /**
   * Memory the pilot may give to tasks, in MiB; defaults to the machine's total.
   */
  memMb?: number;
  runtimeMin?: number;
  sandbox?: string;
  agent?: {
    executors?: number;
    spawners?: number;
    updateWorkers?: number;
    killGraceMs?: number;
    /**
     * How long the agent keeps working without hearing from its client (default 30 s): a client that comes back within it (Session.open({ resume })) finds its tasks running; after it the agent ends its tasks and exits.
     */
    clientTimeoutS?: number;
    logLevel?: 'error' | 'warn' | 'info' | 'debug';
  };
  /**
   * Nodes to allocate (batch resources); the pilot holds them whole.
   */
  nodes?: number;
  /**
   * Batch queue (Slurm partition).
   */
  queue?: string;
  /**
   * Batch account to charge.
   */
  account?: string;
  /**
   * Extra batch directives, one option each (e.g. "--constraint=gpu"), added to the job script as is.
   */
  directives?: string[];
  /**
   * How the client polls and commands the batch system.
   */
  launcher?: {
    pollMs?: number;
  };
}
/**
 * What a user asks a pilot to run.
 */
export interface TaskDescription {
  uid?: string;
  name?: string;
  mode?: 'executable';
  executable: string;
  arguments?: string[];
  environment?: {
    [k: string]: string;
  };
  /**
   * Working directory; defaults to the task sandbox.
   */
  workdir?: string;
  ranks?: number;
  coresPerRank?: number;
  /**
   * GPUs per rank: a whole number, or a fraction below 1 to share one GPU with other tasks (up to 1.0 in total).
   */
  gpusPerRank?: number;
  /**
   * Memory per rank in MiB, counted against the node's memory.
   */
  memPerRankMb?: number;
  /**
   * How ranks start: fork (one rank on the agent's node), mpirun (OpenMPI) or srun (a step of the Slurm allocation the agent runs in). Default: outside Slurm, fork for one rank and mpirun for more; inside a Slurm allocation, fork for one rank on the agent's own node and srun otherwise.
   */
  launch?: 'fork' | 'mpirun' | 'srun';
  priority?: number;
  timeoutS?: number;
  pilot?: string;
  /**
   * Specific GPUs (indices on the node) each rank gets; implies gpusPerRank = their count.
   *
   * @minItems 1
   */
  gpuIndices?: [number, ...number[]];
  tags?: {
    /**
     * All tasks with this tag run on one node.
     */
    colocate?: string;
    /**
     * Nodes running tasks with this tag run no other tasks.
     */
    exclusive?: string;
  };
}
