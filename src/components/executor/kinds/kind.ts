import type { Reason, TaskDescription, TaskRecord } from '../../../generated';
import type { ExecutorJob, ExitedEvent } from '../effects';
import type { LaunchOptions } from '../launch';

/** A task mode (the schema's `mode` enum); the registry maps each to the kind that runs it. */
export type TaskMode = NonNullable<TaskDescription['mode']>;

/** Why a job could not start, as its runner reported it. */
export interface StartFailure {
  code: string;
  message: string;
}

export type Prepared<J extends ExecutorJob = ExecutorJob> =
  { ok: true; job: J } | { ok: false; reason: Reason };

/**
 * How tasks of one mode start (one file each, listed in registry.ts). Everything else (states,
 * timeouts, cancel and kill grace, releasing slots, shutdown) is ExecutorCore's, the same for
 * every kind. Pure: no I/O.
 */
export interface ExecutorKind<J extends ExecutorJob = ExecutorJob> {
  readonly mode: TaskMode;
  /** The job to hand the shell for a task with a sandbox, or why it cannot start. */
  prepare(task: TaskRecord, sandbox: string, launch: LaunchOptions): Prepared<J>;
  /** The task's reason when its job could not start, or was lost after it started (`pid`). */
  startFailure(task: TaskRecord, job: J, failure: StartFailure, pid: number | undefined): Reason;
  /**
   * The task's reason for an exit that says more than its code (a preExec line failed), or
   * undefined: the ManagerOutputStager words the exit code.
   */
  exitReason?(task: TaskRecord, exit: ExitedEvent): Reason | undefined;
  /**
   * A kind whose jobs report when they are ready (services): the seconds a task's job has to
   * become ready, and the reason it fails with when it does not.
   */
  readiness?: {
    withinS(task: TaskRecord): number;
    notReady(task: TaskRecord, job: J): Reason;
    /** The reason of a ready job that missed `misses` liveness probes in a row (it is killed). */
    unhealthy?(task: TaskRecord, job: J, misses: number): Reason;
  };
}
