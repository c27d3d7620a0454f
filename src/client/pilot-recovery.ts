import type { Reason } from '../generated';
import { reason } from '../components/shared/reasons';
import type { Notification } from '../states/notification';
import type { FinalPilotState } from '../states/pilot-model';
import { TASK_RECOVERY_OWNER } from '../states/task-model';

/**
 * The final notifications of the tasks a pilot's agent never returned, once the pilot ended:
 * the client, the owner of last resort, ends them (CANCELED if the pilot was canceled, else
 * FAILED naming the pilot's end).
 */
export function recoveryNotes(
  pilot: string,
  state: FinalPilotState,
  why: Reason | undefined,
  unreturned: readonly { uid: string; attempt: number }[],
  now: number,
): Notification[] {
  const final = state === 'CANCELED' ? 'CANCELED' : 'FAILED';
  const r = reason(
    final === 'CANCELED' ? 'E_CANCELED' : 'E_PILOT_ENDED',
    `pilot ${pilot} ended (${state}${why !== undefined ? `: ${why.message}` : ''}) before the task finished`,
    TASK_RECOVERY_OWNER,
  );
  return unreturned.map((t) => ({
    kind: 'task',
    uid: t.uid,
    attempt: t.attempt,
    state: final,
    ts: now,
    component: TASK_RECOVERY_OWNER,
    detail: { pilot, reason: r },
  }));
}
