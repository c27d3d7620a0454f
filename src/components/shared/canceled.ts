import type { Reason, TaskRecord } from '../../generated';
import type { Notification } from '../../states/notification';
import { reason, type CancelSet } from './reasons';
import { transition } from './transition';

export function canceledBy(component: string): Reason {
  return reason('E_CANCELED', 'task canceled by the user', component);
}

/**
 * The holder's check before it works on a task: a task whose cancel came first ends CANCELED
 * here (its notification goes to `notes`) and the caller skips it. Returns whether it did. A
 * service the cancel stopped after it was ready is not canceled again: it ends DONE.
 */
export function cancelIfAsked(
  task: TaskRecord,
  canceled: CancelSet,
  component: string,
  now: number,
  notes: Notification[],
): boolean {
  // a ready service stopped by the cancel: what follows it is its normal end (DONE)
  if (task.stopped === true || !canceled.has(task.uid)) return false;
  notes.push(transition(task, 'CANCELED', component, now, { reason: canceledBy(component) }));
  return true;
}
