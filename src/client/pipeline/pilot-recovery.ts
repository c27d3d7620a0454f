import type { Reason, TaskRecord } from '../../generated';
import { reason } from '../../components/shared/reasons';
import { nextAttempt, retriesLeft } from '../../components/shared/retry';
import { rankOf } from '../../states/model';
import type { Notification } from '../../states/notification';
import type { FinalPilotState } from '../../states/pilot-model';
import { TASK_MODEL, TASK_RECOVERY_OWNER } from '../../states/task-model';
import type { Task } from '../task';

const EXECUTING = rankOf(TASK_MODEL, 'AGENT_EXECUTING');

/** What the owner of last resort does with the tasks an ended pilot never returned. */
export interface RecoveryPlan {
  /** Final notifications, and the first ones of next attempts. */
  notes: Notification[];
  /** Next attempts, for the ManagerScheduler. */
  retry: TaskRecord[];
}

/**
 * The tasks a pilot's agent never returned, once the pilot ended: the client, the owner of
 * last resort, takes them over. One that had not started goes back to scheduling as a new
 * attempt (not counted against its retries); one that had started is retried when it has
 * retries left, else ends CANCELED (the pilot was canceled) or FAILED naming the pilot's end.
 * What the client already saw move on (a final state, a later attempt) is left alone.
 */
export function recoveryPlan(
  pilot: string,
  state: FinalPilotState,
  why: Reason | undefined,
  unreturned: readonly { uid: string; attempt: number }[],
  taskOf: (uid: string) => Task | undefined,
  session: string,
  now: number,
): RecoveryPlan {
  const plan: RecoveryPlan = { notes: [], retry: [] };
  const final = state === 'CANCELED' ? 'CANCELED' : 'FAILED';
  const r = reason(
    final === 'CANCELED' ? 'E_CANCELED' : 'E_PILOT_ENDED',
    `pilot ${pilot} ended (${state}${why !== undefined ? `: ${why.message}` : ''}) before the task finished`,
    TASK_RECOVERY_OWNER,
    { pilot },
  );
  const lost = reason('E_PILOT_ENDED', r.message, TASK_RECOVERY_OWNER, { pilot });
  for (const given of unreturned) {
    const task = taskOf(given.uid);
    if (task === undefined || task.final || task.attempt > given.attempt) continue;
    const rec = {
      uid: task.uid,
      attempt: given.attempt,
      session,
      description: task.description,
      seq: task.seq,
      retried: task.retried,
    };
    const started = task.attempt === given.attempt && rankOf(TASK_MODEL, task.state) >= EXECUTING;
    if (!started || retriesLeft(rec) > 0) {
      const next = nextAttempt(rec, lost, started, TASK_RECOVERY_OWNER, now);
      next.note.detail!.pilot = pilot;
      plan.notes.push(next.note);
      plan.retry.push(next.record);
      continue;
    }
    plan.notes.push({
      kind: 'task',
      uid: given.uid,
      attempt: given.attempt,
      state: final,
      ts: now,
      component: TASK_RECOVERY_OWNER,
      detail: { pilot, reason: r },
    });
  }
  return plan;
}

/**
 * Tasks a live pilot's agent gave back before they started (they waited there until their
 * walltimeS would pass its drain point, `why`): each that is still that attempt, given to that
 * pilot and not started as the client knows it, starts again as a new attempt that uses no
 * retry. Anything else in the list is left alone (`refused` counts it).
 */
export function returnPlan(
  pilot: string,
  given: readonly { uid: string; attempt: number }[],
  why: Reason,
  taskOf: (uid: string) => Task | undefined,
  owns: (pilot: string, uid: string, attempt: number) => boolean,
  session: string,
  now: number,
): RecoveryPlan & { refused: number } {
  const plan = { notes: [] as Notification[], retry: [] as TaskRecord[], refused: 0 };
  for (const g of given) {
    const task = taskOf(g.uid);
    const current =
      task !== undefined &&
      !task.final &&
      task.attempt === g.attempt &&
      owns(pilot, g.uid, g.attempt);
    if (!current || rankOf(TASK_MODEL, task.state) >= EXECUTING) {
      plan.refused++;
      continue;
    }
    const rec = {
      ...g,
      session,
      description: task.description,
      seq: task.seq,
      retried: task.retried,
    };
    const next = nextAttempt(rec, why, false, TASK_RECOVERY_OWNER, now);
    next.note.detail!.pilot = pilot;
    plan.notes.push(next.note);
    plan.retry.push(next.record);
  }
  return plan;
}
