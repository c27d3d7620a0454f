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
  functionWorkers?: number;
  python?: string;
  updateWorkers?: number;
  killGraceMs?: number;
  heartbeatTimeoutMs?: number;
  logLevel?: 'error' | 'warn' | 'info' | 'debug';
  addresses: {
    /**
     * The pilot's own queue of tasks (the agent pulls).
     */
    agentInput: string;
    /**
     * The pilot's own queue back to the client (the agent pushes).
     */
    managerOutput: string;
    /**
     * The pilot's own control socket (agent_ready, heartbeats, agent_final).
     */
    controlUp: string;
    /**
     * The session's control messages to every agent (the agent subscribes).
     */
    controlDown: string;
    /**
     * The pilot's own socket of the state store (its UpdateWorkers).
     */
    store: string;
    /**
     * The pilot's own file channel (the transfer staging action; the agent's DEALER connects). Absent: transfers are unavailable.
     */
    files?: string;
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
  /**
   * CurveZMQ keys (Z85): the session's public key and the pilot's own pair. Absent only in a session opened insecure: 'trusted-network'.
   */
  curve?: {
    serverKey: string;
    publicKey: string;
    secretKey: string;
  };
}
