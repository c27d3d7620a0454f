import type { TaskRecord } from '../../generated';
import type { StageEffects } from '../shared/transition';
import type { FunctionCallJob } from './functions/pool-types';
import type { WorkerLanguage } from './functions/worker-process';
import type { LaunchFile, LaunchMethod, StepFailure } from './launch';

/** Signals a task may be sent to tell it something (PilotDescription.signalBeforeEnd). */
export type NoticeSignal =
  'SIGTERM' | 'SIGINT' | 'SIGHUP' | 'SIGQUIT' | 'SIGUSR1' | 'SIGUSR2' | 'SIGALRM';
export type KillSignal = NoticeSignal | 'SIGKILL';

/**
 * One process to start: its output to two files, or ('stream') through pipes into the helper's
 * stream file.
 */
export type SpawnSpec = FileSpawnSpec | StreamSpawnSpec;

/** output 'files': stdout and stderr go to these files (made 0600). */
export interface FileSpawnSpec extends SpawnBase {
  stdoutPath: string;
  stderrPath: string;
  stream?: undefined;
}

/**
 * output 'stream': stdout and stderr through pipes into the helper's stream file, framed with
 * the uid and this attempt (src/lib/output-frames.ts); the exit event carries the tails
 * (ExitedEvent.output). The pool needs a `streamDir`, else the spawn fails (EINVAL).
 */
export interface StreamSpawnSpec extends SpawnBase {
  stream: { attempt: number };
  stdoutPath?: undefined;
  stderrPath?: undefined;
}

/** `env` holds only the overrides; the spawner merges them over its own. */
interface SpawnBase {
  uid: string;
  executable: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Small files to write before the process starts (e.g. mpirun's hostfile). */
  files?: LaunchFile[];
  /** 'process': kills signal this process alone, not its group and session (srun). */
  killScope?: 'process';
  /** fork: the cpulist (`0-3,8`) the process is pinned to (the C helper; Node cannot). */
  cpus?: string;
  /**
   * A follow-on start: the uid of a task whose slots this one takes. If that task still runs in
   * the helper that gets this spawn (or is queued there itself), this one waits there and starts
   * the moment that one's main process is reaped, without asking the agent; otherwise it starts
   * at once. A kill of it while it waits fails it (ECANCELED, "canceled before it started").
   */
  after?: string;
}

/** A process run by the SpawnerPool; `method` says how its ranks start (for failure reasons). */
export interface ProcessJob {
  kind: 'process';
  spec: SpawnSpec;
  method: LaunchMethod;
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
