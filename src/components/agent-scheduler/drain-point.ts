import type { TaskRecord } from '../../generated';
import { COMPONENTS } from '../../states/task-model';
import { reason } from '../shared/reasons';
import type { AgentSchedulerEffects } from './effects';

const ME = COMPONENTS.agentScheduler;

/**
 * The pilot's drain point, as the AgentScheduler sees it: when it comes (a task that declares
 * walltimeS starts only if it can end by then), whether it has passed (no task starts any more),
 * and the tasks stranded here because they could no longer end in time. Those go back to the
 * client (E_PILOT_DRAINS) and are kept until the end, in case that was lost. Pure.
 */
export class DrainPoint {
  /** When the pilot drains (clock ms); undefined while it is not known. */
  at: number | undefined;
  /** Past the drain point: no task starts any more. */
  passed = false;
  /** Tasks that can no longer end here before the drain point: they never start here. */
  private readonly stranded = new Map<string, TaskRecord>();
  /** Stranded since the last hand-back to the client. */
  private returning: TaskRecord[] = [];

  /** Stranded tasks (they count as queued). */
  get size(): number {
    return this.stranded.size;
  }

  /** Whether the task declares a walltimeS that would take it past the drain point. */
  tooLate(task: TaskRecord, now: number): boolean {
    const w = task.description.walltimeS;
    return w !== undefined && this.at !== undefined && now + w * 1000 > this.at;
  }

  /** The task never starts here: it goes back to the client at the next hand-back. */
  strand(task: TaskRecord): void {
    this.stranded.set(task.uid, task);
    this.returning.push(task);
  }

  /** Takes a stranded task out (it was canceled), if `uid` is one. */
  take(uid: string): TaskRecord | undefined {
    const task = this.stranded.get(uid);
    if (task !== undefined) this.stranded.delete(uid);
    return task;
  }

  /** Takes every stranded task out (the agent is going away). */
  takeAll(): TaskRecord[] {
    const all = [...this.stranded.values()];
    this.stranded.clear();
    this.returning = [];
    return all;
  }

  /** Hands the tasks stranded since the last time back to the client, to start elsewhere. */
  handBack(now: number, effects: AgentSchedulerEffects): void {
    if (this.returning.length === 0) return;
    const tasks = this.returning;
    this.returning = [];
    if (effects.returnTasks === undefined) return;
    const left = Math.max(0, Math.round(((this.at ?? now) - now) / 1000));
    const why = reason(
      'E_PILOT_DRAINS',
      `the pilot drains in ${left} s, before the walltimeS of these tasks would end: they go back to start on another pilot (no retry used)`,
      ME,
      { drainsInS: left },
    );
    effects.returnTasks(tasks, why);
  }
}
