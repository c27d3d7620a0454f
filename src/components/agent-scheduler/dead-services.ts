import type { Reason, TaskRecord } from '../../generated';
import { COMPONENTS } from '../../states/task-model';
import { reason } from '../shared/reasons';
import { deadServiceOf, serviceEnd, type ServiceEnd } from '../shared/service-ends';

const ME = COMPONENTS.agentScheduler;

/** A slot release, as the Executor sends it: a service that was ready says its attempt ended. */
export interface Released {
  uid: string;
  service?: ServiceEnd;
}

/** The release of a task the Executor let go: a ready service's says how its attempt ended. */
export function releasedOf(t: TaskRecord): Released {
  const end = serviceEnd(t);
  return end === undefined ? { uid: t.uid } : { uid: t.uid, service: end };
}

/**
 * Services whose ready attempt ended on this pilot (their slots came back), so that no task
 * their ready let go starts here with the dead endpoint. Pure; one entry per service.
 */
export class DeadServices {
  private readonly ended = new Map<string, ServiceEnd>();

  get size(): number {
    return this.ended.size;
  }

  record(uid: string, end: ServiceEnd): void {
    const was = this.ended.get(uid);
    if (was === undefined || was.attempt <= end.attempt) this.ended.set(uid, end);
  }

  /**
   * Whether `task` was let go by an ended attempt, and what becomes of it: 'back' to the client
   * to wait for the service's next attempt, or 'cancel' (E_DEPENDENCY) when none follows.
   */
  verdictOf(task: TaskRecord): { to: 'back' | 'cancel'; why: Reason } | undefined {
    if (this.ended.size === 0) return undefined;
    const dead = deadServiceOf(task, (s) => this.ended.get(s)?.attempt);
    if (dead === undefined) return undefined;
    const retry = this.ended.get(dead.service)!.retry;
    const what = retry
      ? 'it goes back to wait for the next attempt of the service (no retry used)'
      : "no attempt of it follows, so its condition 'ready' can never hold";
    const why = reason(
      'E_DEPENDENCY',
      `dependency ${dead.service} (attempt ${dead.attempt}) stopped serving after it was ready and before this task started: ${what}`,
      ME,
      { dependency: dead.service, on: 'ready', attempt: dead.attempt },
    );
    return { to: retry ? 'back' : 'cancel', why };
  }
}
