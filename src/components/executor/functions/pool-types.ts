/** The FunctionPool's public face: its jobs, options and events. */
import type { Logger } from '../../../lib/logger';
import type { CallPhase, WireError } from './worker/protocol';
import type { WorkerLanguage } from './worker-process';

export type { WorkerLanguage } from './worker-process';

export type { CallPhase } from './worker/protocol';

/** One function call to run on worker `worker` (an index below `size`). */
export interface FunctionCallJob {
  uid: string;
  /** An absolute path, a file:// URL, a path relative to `cwd`, or a package name. */
  module: string;
  /** Default: the module's default export. */
  export?: string;
  args?: unknown[];
  /** Set for the call only (PF_*, CUDA_VISIBLE_DEVICES), over the worker's environment. */
  env: Record<string, string>;
  /** The call's working directory, where `module` is resolved from; default the agent's. */
  cwd?: string;
  worker: number;
  /** Its task's attempt, which the frames of its output name (default 1). */
  attempt?: number;
  /** Its own output cap (its task's outputCapBytes): the lower of it and maxOutputBytes holds. */
  outputCap?: number;
}

export type CallError = WireError;

/**
 * What a call printed while it ran (maxOutputBytes): each stream's bytes, capped (WireOutput),
 * and the attempt of its job.
 */
export interface CallPrinted {
  attempt: number;
  stdout?: Uint8Array;
  stderr?: Uint8Array;
  /** Bytes its cap dropped. */
  dropped?: number;
}

/**
 * The function returned (`value`: the msgpack encoding of what it returned) or threw;
 * `printed` when it printed anything while it ran.
 */
export type CallOutcome = (
  | { uid: string; ok: true; value: Uint8Array }
  | { uid: string; ok: false; error: CallError; phase: CallPhase }
) & { printed?: CallPrinted };

/** Why a call was lost: its outcome is unknown or never came. */
export type CallLostCode =
  'E_WORKER_DIED' | 'E_WORKER_KILLED' | 'E_WORKER_START' | 'E_POOL_CLOSED' | 'E_NO_SUCH_WORKER';

export interface CallLost {
  uid: string;
  code: CallLostCode;
  message: string;
  /** The worker that ran it, when one did. */
  pid?: number;
  /** How that worker ended (E_WORKER_DIED, E_WORKER_KILLED). */
  exitCode?: number | null;
  signal?: string | null;
}

/**
 * A call handed to its worker (`pid`). A call has no start time of its own: its AGENT_EXECUTING
 * and exit states are stamped in the same turn.
 */
export interface CallStarted {
  uid: string;
  pid: number;
}

/** Receives events in bulks: one call per kind per chunk read from a worker. */
export interface FunctionPoolHandlers {
  /** The calls were handed to their worker (`pid`); again with the new pid if it is replaced. */
  started(events: CallStarted[]): void;
  finished(events: CallOutcome[]): void;
  failed(events: CallLost[]): void;
  /** Worker `index` cannot start: its calls fail from now on. */
  unusable?(message: string, index: number): void;
}

export interface FunctionPoolOptions {
  workers: number;
  /** The language of its workers (all of one pool speak the same); default 'node'. */
  language?: WorkerLanguage;
  /** The interpreter of Python workers: a path, or a name on PATH; default 'python3'. */
  python?: string;
  logger: Logger;
  handlers: FunctionPoolHandlers;
  /** Where `fworker.<i>.out` and `.err` (`fworker-python.<i>.*` for Python workers: what
   * the functions print) are appended. */
  logDir: string;
  /** Over this process's environment, for every worker. */
  env?: Record<string, string>;
  /** Worker i's own variables (its slot's CUDA_VISIBLE_DEVICES: CUDA reads it once). */
  envOf?: (i: number) => Record<string, string>;
  /** The cpulist worker i is pinned to (taskset); undefined or '': not pinned. */
  cpusOf?: (i: number) => string | undefined;
  /** Largest encoded result; default 1 MiB. */
  maxResultBytes?: number;
  /**
   * What one call may print, kept for it and given with its outcome (`printed`); default 0:
   * what calls print goes to the log files.
   */
  maxOutputBytes?: number;
  /** At close: between the end of the request pipes and the SIGKILL of workers still there. */
  killGraceMs: number;
  /** For a worker to say it is ready; default 10 s. */
  startTimeoutMs?: number;
}

/** Starts of one index that fail in a row before the pool gives the index up. */
export const MAX_START_FAILURES = 3;
