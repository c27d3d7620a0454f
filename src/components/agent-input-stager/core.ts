import type { Reason, TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { Notification } from '../../states/notification';
import { COMPONENTS, type AbortedTaskState } from '../../states/task-model';
import { cancelIfAsked } from '../shared/canceled';
import { CancelSet, reason } from '../shared/reasons';
import { checkArrivals, transition } from '../shared/transition';
import { ArrivalOrder, keepsOrder } from './arrival-order';
import type { AgentInputStagerEffects } from './effects';

const ME = COMPONENTS.agentInputStager;

/** Owns AGENT_STAGING_INPUT: gives each task its sandbox inside the pilot's sandbox. */
export class AgentInputStagerCore {
  private readonly staging = new Map<string, TaskRecord>();
  private readonly canceled = new CancelSet();
  /** Staged tasks go on in arrival order (see ArrivalOrder for which, and why). */
  private readonly order = new ArrivalOrder<{
    uid: string;
    error?: { code: string; message: string };
  }>();

  constructor(
    private readonly effects: AgentInputStagerEffects,
    private readonly clock: Clock,
    private readonly pilotSandbox: string,
  ) {}

  onTasks(tasks: TaskRecord[]): void {
    checkArrivals(tasks, 'AGENT_STAGING_INPUT_PENDING', 'AGENT_STAGING_INPUT', ME);
    const now = this.clock.now();
    const notes: Notification[] = [];
    const work: TaskRecord[] = [];
    for (const task of tasks) {
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      notes.push(transition(task, 'AGENT_STAGING_INPUT', ME, now));
      task.sandbox = `${this.pilotSandbox}/${task.uid}`;
      this.staging.set(task.uid, task);
      work.push(task);
    }
    if (notes.length > 0) this.effects.notify(notes);
    this.order.arrive(work.filter(keepsOrder).map((t) => t.uid));
    if (work.length > 0) this.effects.stage(work);
  }

  onStaged(results: { uid: string; error?: { code: string; message: string } }[]): void {
    const now = this.clock.now();
    const notes: Notification[] = [];
    const out: TaskRecord[] = [];
    for (const r of this.order.settle(results)) {
      const task = this.staging.get(r.uid);
      if (task === undefined) continue;
      this.staging.delete(r.uid);
      // canceled while its sandbox was made
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      if (r.error !== undefined) {
        task.reason = reason(
          'E_STAGING',
          `cannot create the task sandbox ${task.sandbox ?? ''}: ${r.error.message}`,
          ME,
          { errno: r.error.code },
        );
        notes.push(transition(task, 'FAILED', ME, now, { reason: task.reason }));
      } else {
        const detail = task.sandbox !== undefined ? { sandbox: task.sandbox } : undefined;
        notes.push(transition(task, 'AGENT_SCHEDULING_PENDING', ME, now, detail));
        out.push(task);
      }
    }
    if (notes.length > 0) this.effects.notify(notes);
    if (out.length > 0) this.effects.forward(out);
  }

  /** Tasks being staged now are canceled when their staging ends; later arrivals on receipt. */
  onCancel(uids: string[]): void {
    this.canceled.add(uids);
  }

  onShutdown(final: AbortedTaskState, why: Reason): void {
    const now = this.clock.now();
    const notes = [...this.staging.values()].map((t) =>
      transition(t, final, ME, now, { reason: why }),
    );
    this.staging.clear();
    this.order.clear();
    if (notes.length > 0) this.effects.notify(notes);
  }
}
