/* Generated from schemas/task-description.schema.json by scripts/gen-types.js: do not edit. */
import type { Labels } from './labels';
import type { StagingDirective } from './staging-directive';

/**
 * What a user asks a pilot to run: a program (mode 'executable', the default), a call of a function in a warm worker (mode 'function') or a long-running service (mode 'service'). A field not listed here is rejected, with its JSON path.
 */
export type TaskDescription = {
  /**
   * The task's id, unique among the session's tasks: 1 to 128 letters, digits, '.', '_' or '-'. Default: generated in submission order (task.000000, task.000001, ...). Other tasks name it in `after`; its sandbox is <pilot sandbox>/<uid>.
   */
  uid?: string;
  /**
   * A label of your own, up to 256 characters, not necessarily unique; default none. `pilotfish run` names tasks by it in its summary.
   */
  name?: string;
  /**
   * Labels of the task, key to value, for a person and for lists: the jobs service filters tasks by them (GET /v1/tasks?label=key=value). Not used to place the task.
   */
  labels?: {
    [k: string]: string;
  };
  /**
   * 'executable': a program (executable, arguments), as a process per rank. 'function': a call of a module's exported function in one of the pilot's warm worker processes (function). 'service': a long-running program (executable, arguments) that other tasks talk to: it gets a port, is probed until ready, and publishes task.endpoint (service).
   */
  mode?: 'executable' | 'function' | 'service';
  /**
   * mode 'function': the function to call. Its return value comes back as task.result.
   */
  function?: {
    /**
     * The language of the function: its calls run in warm workers of that language. 'python': in the interpreter of the pilot's agent.python (default python3), which needs the msgpack package.
     */
    language?: 'node' | 'python';
    /**
     * node: an absolute path of a module file, or a package name resolved from the task's workdir (else its sandbox). python: a module name (pkg.mod) imported from the task's workdir (else its sandbox), then PYTHONPATH of its environment, then the interpreter's path; or the path of a .py file (absolute, or relative to the workdir).
     */
    module: string;
    /**
     * The function to call. node: default the module's default export (or the module itself when it is a function). python: required (a module has no default function).
     */
    export?: string;
    /**
     * Arguments of the call (values msgpack can carry).
     */
    args?: unknown[];
  };
  /**
   * mode 'service': how the service is reached and when it counts as ready.
   */
  service?: {
    /**
     * The TCP port the service listens on, passed to it as PF_PORT; 'auto': a port free on the agent's node when the service starts.
     */
    port?: number | 'auto';
    /**
     * What makes the service ready; every check given must pass. Without it: a TCP connect to the port when there is one, else as soon as it started.
     */
    ready?: {
      /**
       * A regular expression (JavaScript syntax) matched against each line the service prints on stdout or stderr.
       */
      pattern?: string;
      /**
       * A TCP connection to the endpoint is accepted.
       */
      tcp?: true;
      /**
       * The path of an HTTP GET on the endpoint that answers 2xx, e.g. /health.
       */
      http?: string;
    };
    /**
     * How a ready service is checked to be still alive: a probe every intervalS; after `failures` misses in a row it is killed (its whole process tree) and retried as a new attempt if it has retries left, else FAILED (E_SERVICE_UNHEALTHY). Default, for a service with a port: the HTTP path of `ready.http` if it has one, else a TCP connect, every 10 s, 3 misses. false: none.
     */
    liveness?:
      | false
      | ((
          | {
              tcp: unknown;
            }
          | {
              http: unknown;
            }
        ) & {
          /**
           * A TCP connection to the endpoint is accepted (a stopped or hung process whose socket still accepts passes: use http to see those).
           */
          tcp?: true;
          /**
           * The path of an HTTP GET on the endpoint that answers 2xx within timeoutS, e.g. /health.
           */
          http?: string;
          /**
           * Seconds between the end of one probe and the start of the next.
           */
          intervalS?: number;
          /**
           * Probes missed in a row that make the service unhealthy.
           */
          failures?: number;
          /**
           * How long one probe may take before it counts as missed.
           */
          timeoutS?: number;
        });
    /**
     * How long the service may take to become ready; past it, it is stopped and FAILED (E_SERVICE_NOT_READY) with what it printed.
     */
    startupTimeoutS?: number;
  };
  /**
   * The program to run (modes 'executable' and 'service', where it is required; not allowed in mode 'function'): an absolute path, a path relative to the task's working directory, or a name looked up on PATH (the task's `environment` PATH if it sets one, else the agent's). A file without a #! line runs under /bin/sh.
   */
  executable?: string;
  /**
   * Arguments of the executable, passed as they are (no shell in between: no globbing, no $VAR expansion); default none. Not allowed in mode 'function'.
   */
  arguments?: string[];
  /**
   * Variables set for the task, over the agent's environment: names of letters, digits and '_' (not starting with a digit), string values; default none. pilotfish sets PF_RANK, PF_RANKS, PF_TASK_ID, PF_TASK_SANDBOX, PF_TASK_ATTEMPT, PF_GPUS, PF_CPUS and CUDA_VISIBLE_DEVICES from the task's slot, and OMP_NUM_THREADS = coresPerRank unless set here.
   */
  environment?: {
    [k: string]: string;
  };
  /**
   * The task's working directory; default its own directory, <pilot sandbox>/<task uid> (see `sandbox`). 'pilot' (a name, not a path): the pilot's sandbox, shared by every task that asks for it, as RADICAL-Pilot's pilot:// is. Else an absolute path (a relative one is taken from the agent's own working directory). A task with a workdir gets a directory of its own only when it needs one (see `sandbox`).
   */
  workdir?: string;
  /**
   * Where an executable's stdout and stderr go. 'files': `stdout` and `stderr` in its own sandbox. 'stream': through pipes into a few stream files of its pilot (<pilot sandbox>/output/*.pfout), framed per task: no file or directory of its own; tmgr.tail, `pilotfish tail` and `pilotfish logs` read them. Either way the last lines come back as task.stdout and task.stderr. Default: the pilot's agent.output ('stream' unless the pilot says). A service always writes files; a function call's output is what it prints while it runs, streamed (docs/functions.md).
   */
  output?: 'files' | 'stream';
  /**
   * The most bytes of its stdout and stderr (together) kept, per attempt, with output 'stream': the first half as it comes, then only the last half (held by its spawner helper until its output ends); what lies between is dropped, in its place a line '[pilotfish: N bytes dropped]' in each stream that lost bytes, and task.outputDropped says how many. Default: the pilot's agent.outputCapBytes (64 MiB). Output 'files' is not capped (docs/output.md). A function call keeps at most 1 MiB, or this if lower.
   */
  outputCapBytes?: number;
  /**
   * Whether the task has a directory of its own, <pilot sandbox>/<task uid>: its working directory unless `workdir` says otherwise, PF_TASK_SANDBOX, and what task:// and task://<uid>/ name. Default: true for a task without `workdir`; with a `workdir`, only when the task needs one for files pilotfish makes (output 'files', a service, staging directives, preExec or postExec, more than one rank, launch 'mpirun'). false: without a `workdir`, the same as `workdir: 'pilot'`: the task runs in the pilot's sandbox, which such tasks share, and has a directory of its own only when it needs one (else its task:// and PF_TASK_SANDBOX are the pilot's sandbox). The directory is made as the task starts and removed after it when it stayed empty and the task has no output directives, unless the task says `sandbox: true`.
   */
  sandbox?: boolean;
  /**
   * Processes (MPI ranks) the task runs, each with coresPerRank cores, gpusPerRank GPUs and memPerRankMb MiB; default 1. More than 1 needs launch 'mpirun' or 'srun' (the default launch picks one); mode 'function' allows only 1.
   */
  ranks?: number;
  /**
   * Cores each rank holds, and is pinned to where the machine lets it; default 1. OMP_NUM_THREADS is set to it unless `environment` sets it.
   */
  coresPerRank?: number;
  /**
   * GPUs per rank: a whole number, or a fraction below 1 to share one GPU with other tasks (up to 1.0 in total).
   */
  gpusPerRank?: number;
  /**
   * Memory per rank in MiB; default 0. The scheduler places a rank only where that much of the node's memory (the pilot's memMb) is not held by other tasks. With launch 'fork' it is also the task's memory limit (memPerRankMb x ranks) unless limits.memoryMb says otherwise, where the machine enforces limits (docs/launch-methods.md, 'Resource limits'); a task past it is killed and ends FAILED with E_OUT_OF_MEMORY. srun passes it to Slurm (--mem-per-cpu), which may enforce it; mpirun does not limit it.
   */
  memPerRankMb?: number;
  /**
   * What the task (launch 'fork': its processes on the agent's node) may use, enforced in its cgroups where the machine lets the agent (docs/launch-methods.md, 'Resource limits'; otherwise the pilot's warnings say so). Each unset field falls back to memPerRankMb (memory) and the pilot's agent.taskLimits.
   */
  limits?: {
    /**
     * Memory (RAM, no swap beyond it) in MiB; default memPerRankMb x ranks when memPerRankMb is set, else agent.taskLimits.memoryMb, else none. Past it the kernel's OOM killer kills a process of the task, which then ends FAILED with E_OUT_OF_MEMORY.
     */
    memoryMb?: number;
    /**
     * Processes and threads at once (16 or more: the spawner helper is in the task's cgroup while it forks); default agent.taskLimits.pids (4096). A fork past it fails (EAGAIN).
     */
    pids?: number;
    /**
     * CPU time in cores (a fraction is allowed: 0.5 is half a core), as a CFS quota per 100 ms; default the task's cores (coresPerRank x ranks) when agent.taskLimits.cpus is true, else none.
     */
    cpus?: number;
  };
  /**
   * How ranks start: fork (one rank on the agent's node), mpirun (OpenMPI) or srun (a step of the Slurm allocation the agent runs in). Default: outside Slurm, fork for one rank and mpirun for more; inside a Slurm allocation, fork for one rank on the agent's own node and srun otherwise.
   */
  launch?: 'fork' | 'mpirun' | 'srun';
  /**
   * Any integer, higher first; default 0. Within one priority tasks start in submission order; smaller ones may backfill around a task that waits for room, without delaying it (docs/scheduling.md).
   */
  priority?: number;
  /**
   * Seconds the task may run, counted from its start on the node (not while it waits or stages files), more than 0 and at most 31,536,000 (a year); default: no limit. Past it the task and what it started get SIGTERM, then SIGKILL after the pilot's agent.killGraceMs, and it ends FAILED (E_TASK_TIMEOUT), or is tried again if it has retries left.
   */
  timeoutS?: number;
  /**
   * Seconds the task needs at most once started on the node (its expected runtime), more than 0 and at most 31,536,000 (a year); default: not declared. A pilot starts the task only while at least this much of its runtime is left; otherwise the task waits for, or goes to, a pilot that has the time. `pilotfish simulate` takes it as the task's duration. It is not enforced: timeoutS limits a run.
   */
  walltimeS?: number;
  /**
   * The uid of the pilot the task must run on (one added to its task manager); default: any pilot that has room, the least loaded. A pilot that is not added, or has ended, fails the task (E_NO_SUCH_PILOT).
   */
  pilot?: string;
  /**
   * Specific GPUs (indices on the node) each rank gets; implies gpusPerRank = their count.
   *
   * @minItems 1
   *
   * Items: A GPU index on the node, from 0.
   */
  gpuIndices?: [number, ...number[]];
  /**
   * Placement rules shared with other tasks, by tag value.
   */
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
  /**
   * Where the task may run and where it would rather run, by node: a node named, labels its node must carry, nodes to try first; and GPUs it sees without reserving them. Default: any node with room.
   */
  placement?: {
    /**
     * The node every rank runs on, by the name its pilot's agent reports (a Pilot's `nodes`, a Task's `node`: the host name for a local pilot, Slurm's node name for a batch one): a task no pilot's node by that name can hold fails (E_NEVER_FITS).
     */
    node?: string;
    /**
     * Labels the task's nodes must carry, key to value, all of them: a pilot's `labels` (on all its nodes) and `nodeLabels` (per node) give them. A task no labelled node can hold fails (E_NEVER_FITS).
     */
    selector?: Labels;
    /**
     * Nodes to try first, in this order, when one has room now (the router names the nodes where a model ran before); a soft rule: the task goes elsewhere rather than wait for them.
     *
     * @maxItems 64
     */
    prefer?: string[];
    /**
     * The task sees every GPU of its node (CUDA_VISIBLE_DEVICES, PF_GPUS) without reserving any: for a daemon that shares the GPUs with the tasks that reserve them (a monitor, a cache, a model server that sizes itself). Its gpusPerRank must be 0; default false.
     */
    gpusVisible?: boolean;
  };
  /**
   * Tasks this one waits for: a uid (waits until it is DONE) or { task, on }.
   */
  after?: (
    | string
    | {
        /**
         * The uid of the task to wait for: a task of this session, submitted earlier or in the same call (an unknown uid or a cycle is rejected at submit).
         */
        task: string;
        /**
         * done: the task ended DONE; final: it ended in any way; failed: it ended FAILED; ready: a service task is ready (service tasks only).
         */
        on?: 'done' | 'final' | 'failed' | 'ready';
      }
  )[];
  /**
   * How many more attempts a task gets after a non-zero exit, a timeout or a lost pilot (a cancel never retries).
   */
  retries?: number;
  /**
   * Shell lines run in the task environment before the executable; the first that fails fails the task.
   *
   * Items: One shell line (run by /bin/sh).
   */
  preExec?: string[];
  /**
   * Shell lines run after the executable, whatever its exit code; a failing line fails the task.
   *
   * Items: One shell line (run by /bin/sh).
   */
  postExec?: string[];
  /**
   * Put in place before the task runs.
   */
  inputStaging?: StagingDirective[];
  /**
   * Collected after the task ran (also when it failed).
   */
  outputStaging?: StagingDirective[];
};
