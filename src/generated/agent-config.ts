/* Generated from schemas/agent-config.schema.json by scripts/gen-types.js: do not edit. */

/**
 * The bootstrap file a launcher writes for an agent: who it is and where the client listens.
 */
export interface AgentConfig {
  session: string;
  pilot: string;
  sandbox: string;
  sessionDir: string;
  cores: number;
  gpus: number;
  runtimeMin: number;
  executors?: number;
  spawners?: number;
  updateWorkers?: number;
  killGraceMs?: number;
  heartbeatTimeoutMs?: number;
  logLevel?: 'error' | 'warn' | 'info' | 'debug';
  addresses: {
    agentInput: string;
    managerOutput: string;
    controlIn: string;
    controlOut: string;
    store: string;
  };
  memMb?: number;
  /**
   * How the agent finds its nodes and starts tasks on other nodes.
   */
  resource?: 'local' | 'slurm';
  /**
   * Slurm pilots: the PMI plug-in of the srun steps (srun --mpi=): 'auto' (default) chooses from the MPI library on PATH.
   */
  mpi?: string;
  /**
   * Local pilots: EOF on stdin means the client died.
   */
  watchStdin?: boolean;
}
