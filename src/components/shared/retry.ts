import type { Reason, TaskRecord } from '../../generated';
import type { Notification } from '../../states/notification';
import { TASK_RETRY_STATE } from '../../states/task-model';
import type { ReasonCode } from '../../states/reason-codes';

/**
 * Ways an attempt can end that another attempt may fix (the task's own failure, a timeout, a
 * lost pilot or spawner). Output lost to a full disk is no failure (task.outputLost). A cancel never retries, nor does what would fail again the same way
 * (a missing executable or file, a task no pilot can hold, a broken dependency, function
 * workers that cannot start: E_WORKER_START).
 */
const RETRYABLE: ReadonlySet<ReasonCode> = new Set<ReasonCode>([
  'E_EXIT_CODE',
  'E_SIGNALED',
  'E_NO_EXIT_CODE',
  'E_TASK_TIMEOUT',
  'E_PRE_EXEC',
  'E_POST_EXEC',
  'E_EXEC_FAILED',
  'E_FUNCTION_THREW',
  'E_WORKER_DIED',
  'E_PILOT_ENDED',
  'E_AGENT_SILENT',
  'E_AGENT_DIED',
  'E_SERVICE_UNHEALTHY',
]);

/** Whether an attempt that ended for `why` is retried when the task has retries left. */
export function retryable(why: Reason): boolean {
  return RETRYABLE.has(why.code);
}

/** Retries the task has left (`retries` in its description, less those used). */
export function retriesLeft(task: Pick<TaskRecord, 'description' | 'retried'>): number {
  return Math.max(0, (task.description.retries ?? 0) - (task.retried ?? 0));
}

/**
 * The next attempt of a task: a fresh record back at TMGR_SCHEDULING_PENDING with attempt + 1,
 * and its first notification, carrying why the last attempt ended. `charged`: whether it uses
 * one of the task's retries (a task that never started on a pilot that ended is not charged).
 * Not a transition of the model: a new attempt starts (docs/state-model.md, attempts).
 */
export function nextAttempt(
  task: Pick<TaskRecord, 'uid' | 'attempt' | 'session' | 'description' | 'seq' | 'retried'>,
  why: Reason,
  charged: boolean,
  component: string,
  now: number,
): { record: TaskRecord; note: Notification } {
  const retried = (task.retried ?? 0) + (charged ? 1 : 0);
  const record: TaskRecord = {
    uid: task.uid,
    attempt: task.attempt + 1,
    state: TASK_RETRY_STATE,
    session: task.session,
    description: task.description,
    retried,
  };
  if (task.seq !== undefined) record.seq = task.seq;
  const note: Notification = {
    kind: 'task',
    uid: task.uid,
    attempt: record.attempt,
    state: TASK_RETRY_STATE,
    ts: now,
    component,
    detail: { reason: why, retried },
  };
  return { record, note };
}
