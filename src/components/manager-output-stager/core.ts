import type { TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { TaskFinal } from '../../states/task-final';
import type { Notification, NotificationDetail } from '../../states/notification';
import { COMPONENTS } from '../../states/task-model';
import { cancelIfAsked } from '../shared/canceled';
import { CancelSet, reason } from '../shared/reasons';
import { nextAttempt, retriesLeft, retryable } from '../shared/retry';
import { withStagingProblems } from '../shared/staging-paths';
import { checkArrivals, transition } from '../shared/transition';
import type { ManagerOutputStagerEffects } from './effects';

const ME = COMPONENTS.managerOutputStager;

/**
 * Owns TMGR_STAGING_OUTPUT and the final word: DONE for exit 0 (or a service stopped after it
 * was ready, whatever its exit), FAILED with the reason
 * (a non-zero exit, a signal, a timeout, a launch failure), CANCELED if canceled meanwhile.
 * A failure another attempt may fix, of a task with retries left, is not the last word: the
 * task starts its next attempt at TMGR_SCHEDULING_PENDING instead (the reason goes with it).
 */
export class ManagerOutputStagerCore {
  private readonly canceled = new CancelSet();
  /**
   * Tasks this stager ended (uid -> attempt) whose final state it has not heard back yet. A
   * resumed client may get a task twice (its agent's hand-back, and the one it rebuilt from
   * the store when the hand-back seemed lost): the second copy is dropped, so the task gets one
   * final word even if a cancel came in between.
   */
  private readonly ended = new Map<string, number>();

  constructor(
    private readonly effects: ManagerOutputStagerEffects,
    private readonly clock: Clock,
  ) {}

  onTasks(tasks: TaskRecord[]): void {
    checkArrivals(tasks, 'TMGR_STAGING_OUTPUT_PENDING', 'TMGR_STAGING_OUTPUT', ME);
    const now = this.clock.now();
    const notes: Notification[] = [];
    const retries: TaskRecord[] = [];
    for (const task of tasks) {
      if (this.ended.get(task.uid) === task.attempt) continue;
      this.ended.set(task.uid, task.attempt);
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      const why = task.reason ?? withStagingProblems(exitReason(task), task);
      const retry = why !== undefined && retryable(why) && retriesLeft(task) > 0;
      // an attempt that is retried ends here: published (with why), so that the states it
      // carries reach the store, and callbacks, before the next attempt's
      notes.push(
        transition(task, 'TMGR_STAGING_OUTPUT', ME, now, retry ? { reason: why } : undefined),
      );
      const detail: NotificationDetail = {
        exitCode: task.exitCode ?? null,
        signal: task.signal ?? null,
        stdout: task.stdout ?? '',
        stderr: task.stderr ?? '',
      };
      if (task.result !== undefined) detail.result = task.result;
      if (task.outputDropped !== undefined) detail.outputDropped = task.outputDropped;
      if (task.outputLost !== undefined) detail.outputLost = task.outputLost;
      if (task.pilot !== undefined) detail.pilot = task.pilot;
      if (task.sandbox !== undefined) detail.sandbox = task.sandbox;
      const node = task.slots?.[0]?.node;
      if (node !== undefined) detail.node = node;
      // the agent's note of it may come after this: a tail read at once must know
      if (task.output !== undefined) detail.output = task.output;
      if (why === undefined) {
        notes.push(transition(task, 'DONE', ME, now, detail));
      } else if (retry) {
        const next = nextAttempt(task, why, true, ME, now);
        notes.push({ ...next.note, detail: { ...detail, ...next.note.detail } });
        retries.push(next.record);
      } else {
        notes.push(transition(task, 'FAILED', ME, now, { ...detail, reason: why }));
      }
    }
    if (notes.length > 0) this.effects.notify(notes);
    if (retries.length > 0) this.effects.retry(retries);
  }

  /** Tasks ended (wherever it was decided): cancels and copies kept for them can go. */
  onTasksFinal(finals: readonly TaskFinal[]): void {
    this.canceled.forget(finals);
    for (const f of finals) {
      const attempt = this.ended.get(f.uid);
      if (attempt !== undefined && attempt <= f.attempt) this.ended.delete(f.uid);
    }
  }

  onCancel(uids: string[]): void {
    this.canceled.add(uids);
  }
}

function exitReason(task: TaskRecord): ReturnType<typeof reason> | undefined {
  // a service stopped after it was ready (cancel, pilot end): the signal was its way to end
  if (task.stopped === true) return undefined;
  if (task.signal != null) {
    return reason('E_SIGNALED', `task was killed by ${task.signal}`, ME, { signal: task.signal });
  }
  if (task.exitCode == null) {
    return reason('E_NO_EXIT_CODE', 'task ended without an exit code', ME);
  }
  if (task.exitCode !== 0) {
    const last = (task.stderr ?? '').trim().split('\n').slice(-1)[0] ?? '';
    return reason(
      'E_EXIT_CODE',
      `task exited with code ${task.exitCode}${last !== '' ? `: ${last}` : ''}`,
      ME,
      { exitCode: task.exitCode },
    );
  }
  return undefined;
}
