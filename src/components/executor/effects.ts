import type { TaskRecord } from '../../generated';
import type { StageEffects } from '../shared/transition';
import type { FunctionCallJob } from './functions/pool-types';
import type { WorkerLanguage } from './functions/worker-process';
import type { LaunchMethod, StepFailure } from './launch';
import type { NoticeSignal, SpawnSpec } from './process/helper/protocol';

export type {
  FileSpawnSpec,
  KillSignal,
  NoticeSignal,
  SpawnSpec,
  StreamSpawnSpec,
} from './process/helper/protocol';

/** A process run by the SpawnerPool; `method` says how its ranks start (for failure reasons). */
export interface ProcessJob {
  kind: 'process';
  spec: SpawnSpec;
  method: LaunchMethod;
  /** Forked by this node's sub-agent (LaunchOptions.subAgentNodes), with the task's attempt. */
  node?: string;
  attempt?: number;
  /**
   * The task runs preExec or postExec: where its ranks' status files are (`<prefix>.<rank>`),
   * which the shell reads when the job exits with a non-zero code (ExitedEvent.steps).
   */
  stepStatus?: { prefix: string; ranks: number };
}

/**
 * One call of a module's exported function in a warm worker: the FunctionPool's job, and the
 * language whose pool runs it (absent: 'node').
 */
export interface FunctionCall extends FunctionCallJob {
  language?: WorkerLanguage;
}

export interface FunctionJob {
  kind: 'function';
  call: FunctionCall;
}

/** What makes a service ready: every check given (none: as soon as it started). */
export interface ReadyChecks {
  /** A line of its stdout or stderr matches (a JavaScript regular expression). */
  pattern?: string;
  /** A TCP connection to its endpoint is accepted. */
  tcp?: boolean;
  /** An HTTP GET of this path on its endpoint answers 2xx. */
  http?: string;
}

/**
 * A service: its process as mode 'executable' starts it, probed until ready. With port 'auto'
 * the shell picks a free port and sets PF_PORT before it starts (a fixed one is in the env).
 */
export interface ServiceJob {
  kind: 'service';
  process: ProcessJob;
  port?: number | 'auto';
  /** The host of its endpoint: where dependents and probes reach it. */
  host: string;
  ready: ReadyChecks;
  /** Once ready: how it is probed to be still alive (kinds/service.ts gives the defaults). */
  liveness?: LivenessChecks;
}

/** One check (a TCP connect or an HTTP GET answered 2xx), its timing and its patience. */
export interface LivenessChecks {
  tcp?: boolean;
  http?: string;
  intervalMs: number;
  failures: number;
  timeoutMs: number;
}

/**
 * What an executor kind asks the shell to run, one variant per runner (kinds/*.ts build them).
 * A new runner adds a variant here and a route in shell.ts.
 */
export type ExecutorJob = ProcessJob | FunctionJob | ServiceJob;

/** Why a function call did not return a value: what it threw, or why its value cannot go back. */
export interface FunctionError {
  name: string;
  message: string;
  stack?: string;
  /** import: the module did not load; call: the function threw; encode: its value cannot go back. */
  phase: 'import' | 'call' | 'encode';
}

/** 'term': ask it to end (SIGTERM for a process); 'kill': end it now (SIGKILL). */
export type StopHow = 'term' | 'kill';

/** The job runs; `pid` when it is a process (named in the reason if it is lost later). */
export interface StartedDetail {
  pid?: number;
  /** When it started (epoch ms), as the spawner measured it. */
  t?: number;
}

export interface StartedEvent {
  uid: string;
  pid: number;
  /** When it started (epoch ms), as the spawner measured it (a function call's are its AGENT_EXECUTING and exit states: the same turn). */
  t?: number;
}

export interface ExitedEvent {
  uid: string;
  exitCode: number | null;
  signal: string | null;
  /** When it ended (epoch ms), as the spawner measured it (a function call's are its AGENT_EXECUTING and exit states: the same turn). */
  t?: number;
  /** What failed in which rank, read by the shell from the job's status files (stepStatus). */
  steps?: StepFailure[];
  /** The OOM killer killed processes of the task (its memory limit, SpawnSpec.limits). */
  oom?: { kills: number; limitBytes: number };
  /** A function call that returned (exit code 0): its value. */
  value?: unknown;
  /** A function call that did not (exit code 1): why. */
  error?: FunctionError;
  /**
   * A `stream` spawn: the last bytes (TAIL_BYTES, src/lib/file-tail.ts) of its stdout and
   * stderr as read up to its exit, cut to a line start as file tails are, and the bytes each had;
   * `lost`: frames of it could not be written to the stream file (why, e.g. a full disk).
   */
  output?: {
    stdout: string;
    stderr: string;
    stdoutBytes: number;
    stderrBytes: number;
    /** Bytes its output cap dropped by its exit. */
    dropped?: number;
    lost?: string;
  };
}

/** The job never ran (or its runner was lost): `code` is an errno name or E_SPAWNER_DIED. */
export interface FailedEvent {
  uid: string;
  code: string;
  message: string;
}

/**
 * What ExecutorCore may ask for. All fire-and-forget: the outcome of start and stop comes back
 * later as onStarted / onExited / onStartFailed events.
 */
export interface ExecutorEffects extends StageEffects {
  start(job: ExecutorJob): void;
  /** Stops the task's job (a process: its whole group); a uid with nothing running is ignored. */
  stop(uid: string, how: StopHow): void;
  /** Sends `signal` to the task's processes, to tell it something (it goes on running). */
  signal(uid: string, signal: NoticeSignal): void;
  /** Gives the tasks' slots back to the AgentScheduler. Called exactly once per task. */
  release(tasks: TaskRecord[]): void;
}
