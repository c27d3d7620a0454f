/* Generated from schemas/pilot-description.schema.json by scripts/gen-types.js: do not edit. */
import type { Labels } from './labels';

/**
 * A placeholder job that holds cores, GPUs and memory for tasks: the agent, a process on this machine (resource 'local') or a batch job (slurm). A field not listed here is rejected, with its JSON path.
 */
export interface PilotDescription {
  /**
   * The pilot's id, unique in the session: 1 to 128 letters, digits, '.', '_' or '-'. Default: generated (pilot.0000, pilot.0001, ...). A task's `pilot` names it; its sandbox defaults to <session dir>/<uid>.
   */
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
   * GPUs per node. Default: a local pilot takes every NVIDIA GPU the driver lists on this machine (/proc/driver/nvidia/gpus, as nvidia-smi -L; 0 without the driver); a batch pilot has none unless this says how many (it asks for them: --gpus-per-node, and takes the count Slurm reports for its nodes). Tasks get indices 0..gpus-1 (CUDA_VISIBLE_DEVICES, PF_GPUS); declaring more than the driver lists is allowed (agent.log warns).
   */
  gpus?: number;
  /**
   * Memory the pilot may give to tasks, in MiB; defaults to the machine's total.
   */
  memMb?: number;
  /**
   * Minutes the pilot lives once its agent is up, more than 0 and at most 525,600 (a year); default 60. Then the agent ends it (DONE): tasks still running are killed and end FAILED (E_PILOT_ENDED). A batch job asks for this walltime plus 2 minutes for the agent's own drain.
   */
  runtimeMin?: number;
  /**
   * A signal to the running tasks some seconds before the pilot ends (its runtimeMin, or the end of its batch job), so they can save their state. From then on the pilot starts no task (it drains); at its end the tasks still running are killed and end FAILED (E_PILOT_ENDED), or start again on another pilot when they have retries left. Default: none (the pilot drains at its end).
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
   * The pilot's directory on the compute side: its agent's files (agent.log, agent.out, agent.err, agent.json) and one directory per task (<sandbox>/<task uid>). Default: <session dir>/<pilot uid>. Batch pilots need it on a file system their nodes see.
   */
  sandbox?: string;
  /**
   * Settings of the pilot's agent process; each has a default.
   */
  agent?: {
    /**
     * Spawner helper processes that start the tasks (1 to 64); default: the CPUs of the agent's machine or the pilot's cores, whichever is fewer.
     */
    spawners?: number;
    /**
     * Warm worker processes for function tasks (mode 'function'), started with the first such task; default: one per core of the agent's node.
     */
    functionWorkers?: number;
    /**
     * How many later tasks may start ahead of the first waiting task (by priority, then submission) while it does not fit, before nodes are reserved for it so that it starts next on them: backfill without known durations. Default: the cores of the pilot's largest node. 0 reserves at once (strict order, more idle cores); larger keeps cores busier and lets a wide task wait longer.
     */
    backfillLimit?: number;
    /**
     * The most tasks started by a launcher process (srun or mpirun: a task of several ranks, or one off the agent's node) that run at once on the pilot; default 64. Each such task is one launcher process while it runs, and sites limit them (RADICAL-Pilot reports about 100 concurrent srun as a practical limit). More such tasks wait in the agent's scheduler, holding no slots, and start in order as launcher tasks end; tasks forked by the agent start past them (docs/launch-methods.md, 'Launchers').
     */
    launchers?: number;
    /**
     * Where executables' stdout and stderr go unless a task says (TaskDescription.output): 'files' (each task's `stdout` and `stderr` in a sandbox of its own) or 'stream' (framed into a few stream files in <pilot sandbox>/output/, no file per task). Default 'stream' (docs/output.md).
     */
    output?: 'files' | 'stream';
    /**
     * The output cap of each task that sets none (TaskDescription.outputCapBytes): the most bytes of one attempt's stdout and stderr kept with output 'stream', its first and last halves. Default 67108864 (64 MiB).
     */
    outputCapBytes?: number;
    /**
     * The most disk the pilot's stream files (<pilot sandbox>/output/) take: each spawner helper rotates its file to a new part at a quarter of its share (this divided by the helpers) and removes its oldest parts past its share, so the output of tasks that ended long ago goes first. Readers follow the parts. Default 1073741824 (1 GiB).
     */
    outputDiskBytes?: number;
    /**
     * Whether many identical short executables may queue on the slots of running ones, started by their spawner helper as those end (follow-on starts: docs/scheduling.md); default true. false: each task waits in the scheduler for free slots.
     */
    followOns?: boolean;
    /**
     * A directory on the agent's node under which each task's own directory goes instead of the pilot's sandbox: <taskDirs>/<session uid>/<pilot uid>/<task uid>, e.g. '$TMPDIR' or '/local/scratch' (node-local storage: no metadata load on a shared file system). $NAME and ${NAME} are taken from the agent's environment; the result must be absolute. task:// and task://<uid>/, staging and PF_TASK_SANDBOX name it there; the client reads a task's files there only where it sees that directory (the same machine). A pilot of more than one node, or one whose directory cannot be made, keeps its sandbox and says so in its log and its warnings. Default: the pilot's sandbox.
     */
    taskDirs?: string;
    /**
     * Write each task's description as `task.json` in its sandbox (when it has one), for debugging; default false.
     */
    taskJson?: boolean;
    /**
     * Limits each task (mode 'executable' or 'service', launch 'fork') gets in the cgroups of the agent's node unless its own `limits` or memPerRankMb say otherwise; enforced where the machine lets the agent write cgroup v1 controllers, else said once in the pilot's warnings (docs/launch-methods.md, 'Resource limits').
     */
    taskLimits?: {
      /**
       * Memory limit in MiB of a task that gives neither limits.memoryMb nor memPerRankMb; default none.
       */
      memoryMb?: number;
      /**
       * Processes and threads a task may have at once (pids.max: 16 or more), so that a fork bomb stays in its task; default 4096; 0: no limit.
       */
      pids?: 0 | number;
      /**
       * true: a task may use CPU time of as many cores as it holds (coresPerRank x ranks) and no more (a CFS quota); default false (its cores are only scheduled and, where the machine lets the agent, pinned).
       */
      cpus?: boolean;
    };
    /**
     * The Python interpreter of function workers for tasks of function.language 'python': a path, or a name looked up on the agent's PATH; default 'python3'. It needs the msgpack package (pip install msgpack; Debian: python3-msgpack).
     */
    python?: string;
    /**
     * UpdateWorkers of the agent, which send its notifications to the session's store (1 to 64); default 2.
     */
    updateWorkers?: number;
    /**
     * Milliseconds from SIGTERM to SIGKILL when a task is canceled or times out, and for the processes a task leaves behind when it ends; also how long function workers get to exit. 0 to 3,600,000; default 3000.
     */
    killGraceMs?: number;
    /**
     * How long the client goes on without hearing from the agent (default 30 s): it fails a pilot whose agent is silent that long (E_AGENT_SILENT) and kills the agent. An agent waits for a silent client at least this long too (see clientGraceS).
     */
    clientTimeoutS?: number;
    /**
     * How long an agent whose client is silent keeps working and keeps what it could not deliver (default 900 s, long enough for a login node's reboot; never less than clientTimeoutS), counted from the client's last word: a client that comes back within it (Session.open({ resume }), pilotfish run --resume) finds the tasks run and receives their results. After it the agent ends its tasks and exits, with the reason in its sandbox (agent.end.json).
     */
    clientGraceS?: number;
    /**
     * The lowest level the agent writes to agent.log (in the pilot's sandbox): error, warn, info or debug; default info.
     */
    logLevel?: 'error' | 'warn' | 'info' | 'debug';
    /**
     * Slurm pilots: the PMI plug-in srun starts tasks' ranks with (srun --mpi=<mpi>), e.g. 'pmix', 'pmi2', 'none'. 'auto' picks what the MPI library on the agent's PATH needs among the plug-ins srun offers (PMIx for OpenMPI), checked with a one-rank step at agent start. A task's environment SLURM_MPI_TYPE overrides it.
     */
    mpi?: string;
    /**
     * Slurm pilots: 'per-node' starts one executing sub-agent on every node of the allocation (one srun step each, for the pilot's life), which forks the one-rank tasks placed on its node: no srun per task. Tasks with ranks on several nodes still start through srun. A sub-agent that dies is started again (its running tasks fail E_SUBAGENT_LOST); one that cannot be had gives its node up.
     */
    subAgents?: 'none' | 'per-node';
    /**
     * Slurm pilots: how many times the agent is started again inside the allocation when it dies (a crash, a SIGKILL, the out-of-memory killer) before the pilot ends FAILED. The new agent takes over what the one before it held, from its journal in the pilot sandbox: tasks still running on the nodes' sub-agents (agent.subAgents 'per-node') run on and end once; tasks that died with the agent (its own forks, srun steps, function calls, services) end E_AGENT_DIED and are retried if they have retries left; tasks not started yet start as if nothing happened. 0: the pilot ends with its agent.
     */
    restarts?: number;
  };
  /**
   * Nodes to allocate (batch resources); the pilot holds them whole.
   */
  nodes?: number;
  /**
   * Labels of every node of the pilot, key to value, that tasks select nodes by (a task's placement.selector): what the nodes have that a task may need (a GPU model, a local disk, a cached model). Default none.
   */
  labels?: Labels;
  /**
   * Labels of single nodes, by the node's name (as its agent reports it: the host name for a local pilot, Slurm's node names for a batch pilot), over the pilot's `labels`. A name no node of the pilot has labels nothing (the pilot's info says so in its warnings).
   */
  nodeLabels?: {
    [k: string]: Labels;
  };
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
   *
   * Items: One batch option, e.g. "--constraint=gpu".
   */
  directives?: string[];
  /**
   * How the client polls and commands the batch system.
   */
  launcher?: {
    /**
     * Milliseconds between two looks at the batch job's state (scontrol show job), 50 to 3,600,000; default 1000.
     */
    pollMs?: number;
  };
}
