/* Generated from schemas/pilot-description.schema.json by scripts/gen-types.js: do not edit. */

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
    /**
     * Warm worker processes for function tasks (mode 'function'), started with the first such task; default: one per core of the agent's node.
     */
    functionWorkers?: number;
    /**
     * The Python interpreter of function workers for tasks of function.language 'python': a path, or a name looked up on the agent's PATH; default 'python3'. It needs the msgpack package (pip install msgpack; Debian: python3-msgpack).
     */
    python?: string;
    updateWorkers?: number;
    killGraceMs?: number;
    /**
     * How long each side goes on without hearing from the other (default 30 s). The agent keeps working that long without its client: a client that comes back within it (Session.open({ resume })) finds its tasks running; after it the agent ends its tasks and exits. The client fails a pilot whose agent is silent that long (E_AGENT_SILENT) and kills the agent.
     */
    clientTimeoutS?: number;
    logLevel?: 'error' | 'warn' | 'info' | 'debug';
    /**
     * Slurm pilots: the PMI plug-in srun starts tasks' ranks with (srun --mpi=<mpi>), e.g. 'pmix', 'pmi2', 'none'. 'auto' picks what the MPI library on the agent's PATH needs among the plug-ins srun offers (PMIx for OpenMPI), checked with a one-rank step at agent start. A task's environment SLURM_MPI_TYPE overrides it.
     */
    mpi?: string;
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
