/* Generated from schemas/task-description.schema.json by scripts/gen-types.js: do not edit. */
import type { StagingDirective } from './staging-directive';

/**
 * What a user asks a pilot to run.
 */
export type TaskDescription = {
  uid?: string;
  name?: string;
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
     * How long the service may take to become ready; past it, it is stopped and FAILED (E_SERVICE_NOT_READY) with what it printed.
     */
    startupTimeoutS?: number;
  };
  executable?: string;
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
  /**
   * Tasks this one waits for: a uid (waits until it is DONE) or { task, on }.
   */
  after?: (
    | string
    | {
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
   */
  preExec?: string[];
  /**
   * Shell lines run after the executable, whatever its exit code; a failing line fails the task.
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
