import type { Reason, TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { Notification, NotificationDetail } from '../../states/notification';
import { COMPONENTS, type AbortedTaskState } from '../../states/task-model';
import { cancelIfAsked } from '../shared/canceled';
import { CancelSet } from '../shared/reasons';
import { checkArrivals, transition } from '../shared/transition';
import type { AgentOutputStagerEffects } from './effects';

const ME = COMPONENTS.agentOutputStager;

/** Owns AGENT_STAGING_OUTPUT: collects stdout/stderr tails and hands the task back to the client. */
export class AgentOutputStagerCore {
  private readonly collecting = new Map<string, TaskRecord>();
  private readonly canceled = new CancelSet();

  constructor(
    private readonly effects: AgentOutputStagerEffects,
    private readonly clock: Clock,
  ) {}

  onTasks(tasks: TaskRecord[]): void {
    checkArrivals(tasks, 'AGENT_STAGING_OUTPUT_PENDING', 'AGENT_STAGING_OUTPUT', ME);
    const now = this.clock.now();
    const notes: Notification[] = [];
    const work: TaskRecord[] = [];
    for (const task of tasks) {
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      notes.push(transition(task, 'AGENT_STAGING_OUTPUT', ME, now));
      this.collecting.set(task.uid, task);
      work.push(task);
    }
    if (notes.length > 0) this.effects.notify(notes);
    if (work.length > 0) this.effects.collect(work);
  }

  onCollected(results: { uid: string; stdout: string; stderr: string }[]): void {
    const now = this.clock.now();
    const notes: Notification[] = [];
    const out: TaskRecord[] = [];
    for (const r of results) {
      const task = this.collecting.get(r.uid);
      if (task === undefined) continue;
      this.collecting.delete(r.uid);
      task.stdout = r.stdout;
      task.stderr = r.stderr;
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      // the hand-back carries what the client needs to end the task, so a client that resumes
      // after losing the task on the wire can finish it from the store alone (with the
      // executor's reason, e.g. a timeout, whose own notification may come later)
      const detail: NotificationDetail = {
        exitCode: task.exitCode ?? null,
        signal: task.signal ?? null,
        stdout: r.stdout,
        stderr: r.stderr,
      };
      if (task.reason !== undefined) detail.reason = task.reason;
      notes.push(transition(task, 'TMGR_STAGING_OUTPUT_PENDING', ME, now, detail));
      out.push(task);
    }
    if (notes.length > 0) this.effects.notify(notes);
    if (out.length > 0) this.effects.forward(out);
  }

  onCancel(uids: string[]): void {
    this.canceled.add(uids);
  }

  onShutdown(final: AbortedTaskState, why: Reason): void {
    const now = this.clock.now();
    const notes = [...this.collecting.values()].map((t) =>
      transition(t, final, ME, now, { reason: why }),
    );
    this.collecting.clear();
    if (notes.length > 0) this.effects.notify(notes);
  }
}
