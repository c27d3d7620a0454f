import type { TaskRecord } from '../../generated';
import { hopOf } from '../../states/pipeline';
import { COMPONENTS, type TaskState } from '../../states/task-model';
import type { Task } from '../task';

/** The state a task an agent handed back to the client arrives in (TMGR_STAGING_OUTPUT_PENDING). */
export const HANDED_BACK = hopOf(COMPONENTS.managerOutputStager).arrives;

/** The record a component needs to take a task back in `state`. */
export function recordOf(task: Task, state: TaskState, session: string): TaskRecord {
  const rec: TaskRecord = {
    uid: task.uid,
    attempt: task.attempt,
    state,
    session,
    description: task.description,
    seq: task.seq,
    retried: task.retried,
  };
  if (task.pilot !== undefined) rec.pilot = task.pilot;
  if (task.sandbox !== undefined) rec.sandbox = task.sandbox;
  if (task.exitCode !== undefined) rec.exitCode = task.exitCode;
  if (task.signal !== undefined) rec.signal = task.signal;
  if (task.stdout !== undefined) rec.stdout = task.stdout;
  if (task.stderr !== undefined) rec.stderr = task.stderr;
  if (task.outputDropped !== undefined) rec.outputDropped = task.outputDropped;
  if (task.outputLost !== undefined) rec.outputLost = task.outputLost;
  if (task.result !== undefined) rec.result = task.result;
  // why its executor ended it (a timeout): the output stager's final word keeps it
  if (state === HANDED_BACK && task.reason !== undefined) rec.reason = task.reason;
  return rec;
}
