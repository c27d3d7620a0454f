/* Generated from schemas/agent-config.schema.json by scripts/gen-types.js: do not edit. */
import type { Labels } from './labels';

/**
 * The bootstrap file a launcher writes for an agent: who it is and where the client listens.
 */
export interface AgentConfig {
  /**
   * The session's uid.
   */
  session: string;
  /**
   * The pilot's uid.
   */
  pilot: string;
  /**
   * The pilot's sandbox: the agent's logs and the tasks' directories.
   */
  sandbox: string;
  /**
   * The session directory, on the client's side.
   */
  sessionDir: string;
  /**
   * Cores the pilot holds (local), or in all (batch: the agent reads its nodes from the batch system).
   */
  cores: number;
  /**
   * GPUs per node the pilot declares (a Slurm job's own GPU count takes precedence).
   */
  gpus: number;
  /**
   * Minutes the agent runs once up; then it ends the pilot DONE.
   */
  runtimeMin: number;
  /**
   * The pilot description's signalBeforeEnd.
   */
  signalBeforeEnd?: {
    /**
     * The signal every running task (and what it started) gets.
     */
    signal: 'SIGTERM' | 'SIGINT' | 'SIGHUP' | 'SIGQUIT' | 'SIGUSR1' | 'SIGUSR2' | 'SIGALRM';
    /**
     * How long before the pilot's end: from then on the pilot starts no task, and at its end what still runs is killed.
     */
    seconds: number;
  };
  /**
   * Spawner helper processes; default min(CPUs of the machine, cores).
   */
  spawners?: number;
  /**
   * The pilot's agent.subAgents: 'per-node' starts an executing sub-agent on every node (inside a Slurm allocation). Absent: 'none'.
   */
  subAgents?: 'none' | 'per-node';
  /**
   * Warm workers for function tasks; default one per core of the agent's node.
   */
  functionWorkers?: number;
  /**
   * How many later tasks may start ahead of the first waiting task (by priority, then submission) while it does not fit, before nodes are reserved for it so that it starts next on them: backfill without known durations. Default: the cores of the pilot's largest node. 0 reserves at once (strict order, more idle cores); larger keeps cores busier and lets a wide task wait longer.
   */
  backfillLimit?: number;
  /**
   * PilotDescription.agent.launchers: the most tasks started by a launcher process (srun, mpirun) that run at once; default 64.
   */
  launchers?: number;
  /**
   * Where executables' stdout and stderr go unless a task says (TaskDescription.output): 'files' (each task's `stdout` and `stderr` in a sandbox of its own) or 'stream' (framed into a few stream files in <pilot sandbox>/output/, no file per task). Default 'stream' (docs/output.md).
   */
  output?: 'files' | 'stream';
  /**
   * PilotDescription.agent.outputCapBytes: the output cap of a 'stream' task that sets none; default 67108864.
   */
  outputCapBytes?: number;
  /**
   * PilotDescription.agent.outputDiskBytes: the most disk the stream files take; default 1073741824.
   */
  outputDiskBytes?: number;
  /**
   * Whether many identical short executables may queue on the slots of running ones, started by their spawner helper as those end (follow-on starts: docs/scheduling.md); default true. false: each task waits in the scheduler for free slots.
   */
  followOns?: boolean;
  /**
   * The pilot's agent.taskDirs: where tasks' own directories go on the agent's node (PilotDescription).
   */
  taskDirs?: string;
  /**
   * Write each task's description as `task.json` in its sandbox (when it has one), for debugging; default false.
   */
  taskJson?: boolean;
  /**
   * The pilot's agent.taskLimits: the limits of tasks that set none.
   */
  taskLimits?: {
    /**
     * Memory limit in MiB of a task that gives neither limits.memoryMb nor memPerRankMb; default none.
     */
    memoryMb?: number;
    /**
     * Processes and threads of a task at once; default 4096; 0: no limit.
     */
    pids?: number;
    /**
     * true: a task may use the CPU time of the cores it holds and no more; default false.
     */
    cpus?: boolean;
  };
  /**
   * The Python interpreter of Python function workers; default python3.
   */
  python?: string;
  /**
   * The agent's UpdateWorkers; default 2.
   */
  updateWorkers?: number;
  /**
   * Milliseconds from SIGTERM to SIGKILL; default 3000.
   */
  killGraceMs?: number;
  /**
   * Milliseconds without the client's heartbeat after which the agent ends its tasks and exits (unless clientGraceMs is longer); 0: never; default 30000 (the pilot's agent.clientTimeoutS).
   */
  heartbeatTimeoutMs?: number;
  /**
   * An embedded session's addresses.json (in its directory, 0600: only its owner writes it): where a resumed client that could not bind the old ports listens now (schemas/published-addresses.schema.json). Read while the client is silent.
   */
  addressFile?: string;
  /**
   * Milliseconds the agent works on without hearing from its client, when longer than heartbeatTimeoutMs (the pilot's agent.clientGraceS; the client always sets it, default 900000); absent: heartbeatTimeoutMs.
   */
  clientGraceMs?: number;
  /**
   * The lowest level written to agent.log; default info.
   */
  logLevel?: 'error' | 'warn' | 'info' | 'debug';
  /**
   * Where the agent connects: the session's sockets for this pilot.
   */
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
     * The pilot's own socket of the session's embedded state store (its UpdateWorkers). Absent: the session's store is MongoDB (mongodb).
     */
    store?: string;
    /**
     * The pilot's own file channel (the transfer staging action; the agent's DEALER connects). Absent: transfers are unavailable.
     */
    files?: string;
  };
  /**
   * The session's MongoDB store, which the agent's UpdateWorkers write to directly (instead of addresses.store). The URI may hold a password: this file is mode 0600 and the agent never logs it.
   */
  mongodb?: {
    /**
     * The MongoDB connection string, as the session was opened with.
     */
    uri: string;
    /**
     * The database of the session's documents.
     */
    db: string;
  };
  /**
   * The pilot's labels: on every node, for tasks' placement.selector.
   */
  labels?: Labels;
  /**
   * Labels of single nodes by name, over the pilot's labels.
   */
  nodeLabels?: {
    [k: string]: Labels;
  };
  /**
   * Memory the pilot gives tasks, in MiB, per node; default the machine's total (local) or what Slurm gives.
   */
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
    /**
     * The session's public key (Z85, 40 characters).
     */
    serverKey: string;
    /**
     * The pilot's own public key (Z85, 40 characters).
     */
    publicKey: string;
    /**
     * The pilot's own secret key (Z85, 40 characters).
     */
    secretKey: string;
  };
  /**
   * How many times the batch script starts the agent again after it dies (the pilot's agent.restarts); > 0: the agent keeps a journal of the tasks it holds in the sandbox, for the next one.
   */
  restarts?: number;
}
