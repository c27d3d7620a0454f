/* Generated from schemas/task-record.schema.json by scripts/gen-types.js: do not edit. */

/**
 * A state of the task model, in model order (docs/state-model.md).
 */
export type TaskState =
  | 'NEW'
  | 'TMGR_SCHEDULING_PENDING'
  | 'TMGR_SCHEDULING'
  | 'TMGR_STAGING_INPUT_PENDING'
  | 'TMGR_STAGING_INPUT'
  | 'AGENT_STAGING_INPUT_PENDING'
  | 'AGENT_STAGING_INPUT'
  | 'AGENT_SCHEDULING_PENDING'
  | 'AGENT_SCHEDULING'
  | 'AGENT_EXECUTING_PENDING'
  | 'AGENT_EXECUTING'
  | 'AGENT_STAGING_OUTPUT_PENDING'
  | 'AGENT_STAGING_OUTPUT'
  | 'TMGR_STAGING_OUTPUT_PENDING'
  | 'TMGR_STAGING_OUTPUT'
  | 'DONE'
  | 'FAILED'
  | 'CANCELED';

/**
 * A task as components hand it on: its description plus what the pipeline has added.
 */
export interface TaskRecord {
  uid: string;
  attempt: number;
  state: TaskState;
  session: string;
  description: TaskDescription;
  pilot?: string;
  sandbox?: string;
  /**
   * Items: One rank's resources on one node.
   */
  slots?: {
    node: string;
    cores: number[];
    gpus: number[];
    /**
     * Fraction of each listed GPU this rank holds (1 = whole).
     */
    gpuShare?: number;
    memMb?: number;
  }[];
  exitCode?: number | null;
  signal?: string | null;
  stdout?: string;
  stderr?: string;
  reason?: Reason;
  canceled?: boolean;
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
/**
 * Why a task or pilot failed or was canceled, in words a person can act on.
 */
export interface Reason {
  /**
   * One of the codes of src/states/reason-codes.ts (docs/reason-codes.md).
   */
  code:
    | 'E_AGENT_DIED'
    | 'E_BAD_MESSAGE'
    | 'E_BAD_REQUEST'
    | 'E_CANCELED'
    | 'E_EXEC_FAILED'
    | 'E_EXEC_NOT_FOUND'
    | 'E_EXEC_PERMISSION'
    | 'E_EXIT_CODE'
    | 'E_JOB_CANCELED'
    | 'E_JOB_FAILED'
    | 'E_LAUNCH'
    | 'E_LAUNCH_METHOD'
    | 'E_LAUNCH_SLOTS'
    | 'E_MODE_UNSUPPORTED'
    | 'E_NEVER_ACTIVE'
    | 'E_NEVER_FITS'
    | 'E_NO_EXIT_CODE'
    | 'E_NO_SANDBOX'
    | 'E_NO_SUCH_PILOT'
    | 'E_PILOT_ENDED'
    | 'E_RUNTIME_EXCEEDED'
    | 'E_SIGNALED'
    | 'E_STAGING'
    | 'E_TASK_TIMEOUT'
    | 'E_UNSUPPORTED'
    | 'I_PILOT_DONE';
  message: string;
  component: string;
  detail?: {};
}
