import type { Reason, TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { TaskFinal } from '../../states/task-final';
import type { Notification } from '../../states/notification';
import { handOffNamesPilot } from '../../states/quiet-states';
import { COMPONENTS, type AbortedTaskState } from '../../states/task-model';
import { cancelIfAsked } from '../shared/canceled';
import { CancelSet, reason } from '../shared/reasons';
import { nextAttempt } from '../shared/retry';
import { checkArrivals, transition } from '../shared/transition';
import type { ManagerInputStagerEffects } from './effects';
import { cwdOnlyLookup, resolveStaging, type StagingLookup } from './resolve';

const ME = COMPONENTS.managerInputStager;

/**
 * Owns TMGR_STAGING_INPUT: resolves what only the client knows in the task's staging
 * directives (`client://`, another task's `task://<uid>/`) into the record's `staging`, then
 * hands each task to its pilot's agent, which performs them. A directive that cannot be
 * resolved fails the task here; a task whose pilot ended before it got there goes back to the
 * ManagerScheduler as a new attempt (not counted against its retries: it never ran).
 */
export class ManagerInputStagerCore {
  private readonly canceled = new CancelSet();
  private readonly gone = new Map<string, string>();

  constructor(
    private readonly effects: ManagerInputStagerEffects,
    private readonly clock: Clock,
    /** The session gives its task registry; by default no other task is known. */
    private readonly lookup: StagingLookup = cwdOnlyLookup(process.cwd()),
  ) {}

  onTasks(tasks: TaskRecord[]): void {
    checkArrivals(tasks, 'TMGR_STAGING_INPUT_PENDING', 'TMGR_STAGING_INPUT', ME);
    const now = this.clock.now();
    const notes: Notification[] = [];
    const byPilot = new Map<string, TaskRecord[]>();
    const again: TaskRecord[] = [];
    for (const task of tasks) {
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      notes.push(transition(task, 'TMGR_STAGING_INPUT', ME, now));
      const pilot = task.pilot;
      if (pilot === undefined || this.gone.has(pilot)) {
        const why = reason(
          'E_PILOT_ENDED',
          pilot === undefined
            ? 'task reached input staging without a pilot'
            : `pilot ${pilot} ended (${this.gone.get(pilot)}) before the task reached it`,
          ME,
        );
        if (pilot === undefined) {
          task.reason = why;
          notes.push(transition(task, 'FAILED', ME, now, { reason: why }));
        } else {
          const next = nextAttempt(task, why, false, ME, now);
          notes.push(next.note);
          again.push(next.record);
        }
        continue;
      }
      const resolved = resolveStaging(task, this.lookup);
      if ('error' in resolved) {
        task.reason = reason('E_STAGING', resolved.error, ME);
        notes.push(transition(task, 'FAILED', ME, now, { reason: task.reason }));
        continue;
      }
      // a retry resolves again: another task may have run meanwhile
      if (resolved.staging !== undefined) task.staging = resolved.staging;
      else delete task.staging;
      // a task whose assignment to the pilot was quiet names it here (resume needs it)
      const named = handOffNamesPilot(task.description.mode) ? { pilot } : undefined;
      notes.push(transition(task, 'AGENT_STAGING_INPUT_PENDING', ME, now, named));
      let list = byPilot.get(pilot);
      if (list === undefined) byPilot.set(pilot, (list = []));
      list.push(task);
    }
    if (notes.length > 0) this.effects.notify(notes);
    for (const [pilot, list] of byPilot) this.effects.forwardToPilot(pilot, list);
    if (again.length > 0) this.effects.retry(again);
  }

  /** Tasks ended (wherever it was decided): cancels kept for them can go. */
  onTasksFinal(finals: readonly TaskFinal[]): void {
    this.canceled.forget(finals);
  }

  onPilotGone(uid: string, state: string): void {
    this.gone.set(uid, state);
  }

  onCancel(uids: string[]): void {
    this.canceled.add(uids);
  }

  onShutdown(_final: AbortedTaskState, _why: Reason): void {
    // holds nothing between events
  }
}
