import type { Reason, TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { Notification, NotificationDetail } from '../../states/notification';
import { COMPONENTS, type AbortedTaskState } from '../../states/task-model';
import { cancelIfAsked } from '../shared/canceled';
import { CancelSet, reason } from '../shared/reasons';
import {
  agentSteps,
  failureMessage,
  type StagingStep,
  type StepFailure,
} from '../shared/staging-paths';
import { retriesLeft } from '../shared/retry';
import { checkArrivals, transition } from '../shared/transition';
import { removedWhenEmpty } from '../shared/workdir';
import type { AgentOutputStagerEffects } from './effects';

const ME = COMPONENTS.agentOutputStager;

/**
 * The task's own directory, to remove if it stayed empty (workdir.ts removedWhenEmpty);
 * undefined: keep it. Kept too while another attempt may come back to it: one that did not
 * succeed and has retries left (its removal, in the background, could follow the retry's start).
 */
export function removableSandbox(task: TaskRecord, pilotSandbox: string): string | undefined {
  const own = task.sandbox !== undefined && task.sandbox !== pilotSandbox;
  if (!own || !removedWhenEmpty(task.description)) return undefined;
  const succeeded = task.exitCode === 0 && task.signal == null && task.reason === undefined;
  return succeeded || retriesLeft(task) === 0 ? task.sandbox : undefined;
}

/**
 * Owns AGENT_STAGING_OUTPUT: collects stdout/stderr tails, has the output directives of every
 * task that ran performed (whatever its exit code), and hands the task back to the client. A
 * directive that fails fails a task that had succeeded, here; a task that had failed keeps its
 * own reason, the failed directives added to its detail.
 */
export class AgentOutputStagerCore {
  /** Tasks whose tails are being read. */
  private readonly collecting = new Map<string, TaskRecord>();
  /** Tasks whose output directives are being performed. */
  private readonly directing = new Map<string, TaskRecord>();
  private readonly canceled = new CancelSet();

  constructor(
    private readonly effects: AgentOutputStagerEffects,
    private readonly clock: Clock,
    private readonly pilotSandbox: string,
  ) {}

  onTasks(tasks: TaskRecord[]): void {
    checkArrivals(tasks, 'AGENT_STAGING_OUTPUT_PENDING', 'AGENT_STAGING_OUTPUT', ME);
    const now = this.clock.now();
    const notes: Notification[] = [];
    const out: TaskRecord[] = [];
    const work: TaskRecord[] = [];
    const directives: { uid: string; steps: StagingStep[] }[] = [];
    for (const task of tasks) {
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      notes.push(transition(task, 'AGENT_STAGING_OUTPUT', ME, now));
      // a function call writes no stdout or stderr files, a streamed task's tails came with
      // its exit: no tails to read
      if (task.description.mode === 'function' || task.output === 'stream') {
        this.collected(task, task.stdout ?? '', task.stderr ?? '', now, notes, out, directives);
        continue;
      }
      this.collecting.set(task.uid, task);
      work.push(task);
    }
    this.hand(notes, out, directives);
    if (work.length > 0) this.effects.collect(work);
  }

  onCollected(results: { uid: string; stdout: string; stderr: string }[]): void {
    const now = this.clock.now();
    const notes: Notification[] = [];
    const out: TaskRecord[] = [];
    const work: { uid: string; steps: StagingStep[] }[] = [];
    for (const r of results) {
      const task = this.collecting.get(r.uid);
      if (task === undefined) continue;
      this.collecting.delete(r.uid);
      this.collected(task, r.stdout, r.stderr, now, notes, out, work);
    }
    this.hand(notes, out, work);
  }

  /** The effects of one handler call, each kind as one bulk. */
  private hand(
    notes: Notification[],
    out: TaskRecord[],
    work: { uid: string; steps: StagingStep[] }[],
  ): void {
    if (notes.length > 0) this.effects.notify(notes);
    if (out.length > 0) this.effects.forward(out);
    if (work.length > 0) this.effects.stageOutput(work);
    const empty = out.flatMap((t) => removableSandbox(t, this.pilotSandbox) ?? []);
    if (empty.length > 0) this.effects.removeIfEmpty(empty);
  }

  /** A task's tails are in: hand it back, or have its output directives performed first. */
  private collected(
    task: TaskRecord,
    stdout: string,
    stderr: string,
    now: number,
    notes: Notification[],
    out: TaskRecord[],
    work: { uid: string; steps: StagingStep[] }[],
  ): void {
    task.stdout = stdout;
    task.stderr = stderr;
    const ran = task.exitCode != null || task.signal != null;
    if (!ran || (task.staging?.output.length ?? 0) === 0) {
      this.finish(task, [], now, notes, out);
      return;
    }
    const plan = agentSteps(task, 'output', this.pilotSandbox);
    if ('error' in plan) {
      const bad = { index: plan.index, path: '', errno: 'EINVAL', text: plan.error };
      this.finish(task, [bad], now, notes, out);
      return;
    }
    this.directing.set(task.uid, task);
    work.push({ uid: task.uid, steps: plan.steps });
  }

  /** The output directives of tasks were performed: every failure is kept. */
  onOutputStaged(results: { uid: string; failures: StepFailure[] }[]): void {
    const now = this.clock.now();
    const notes: Notification[] = [];
    const out: TaskRecord[] = [];
    for (const r of results) {
      const task = this.directing.get(r.uid);
      if (task === undefined) continue;
      this.directing.delete(r.uid);
      this.finish(task, r.failures, now, notes, out);
    }
    if (notes.length > 0) this.effects.notify(notes);
    if (out.length > 0) this.effects.forward(out);
  }

  private finish(
    task: TaskRecord,
    failures: StepFailure[],
    now: number,
    notes: Notification[],
    out: TaskRecord[],
  ): void {
    if (cancelIfAsked(task, this.canceled, ME, now, notes)) return;
    // the hand-back carries what the client needs to end the task, so a client that resumes
    // after losing the task on the wire can finish it from the store alone (with the
    // executor's reason, e.g. a timeout, whose own notification may come later)
    const detail: NotificationDetail = {
      exitCode: task.exitCode ?? null,
      signal: task.signal ?? null,
      stdout: task.stdout ?? '',
      stderr: task.stderr ?? '',
    };
    if (task.result !== undefined) detail.result = task.result;
    const problems = failures.map((f) => ({
      directive: f.index,
      path: f.path,
      errno: f.errno,
      message: failureMessage(task, 'output', f),
    }));
    const first = problems[0];
    const succeeded = task.exitCode === 0 && task.signal == null && task.reason === undefined;
    if (first !== undefined && succeeded) {
      const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
      const { message, ...where } = first;
      task.reason = reason('E_STAGING', `${message}${more}`, ME, {
        ...where,
        ...(problems.length > 1 ? { staging: problems } : {}),
      });
      if (task.sandbox !== undefined) detail.sandbox = task.sandbox;
      notes.push(transition(task, 'FAILED', ME, now, { ...detail, reason: task.reason }));
      return;
    }
    if (first !== undefined) {
      // failed already: its own reason stays, the directives that failed go in its detail
      if (task.staging !== undefined) task.staging.problems = problems;
      if (task.reason !== undefined) {
        task.reason = { ...task.reason, detail: { ...task.reason.detail, staging: problems } };
      }
    }
    if (task.reason !== undefined) detail.reason = task.reason;
    notes.push(transition(task, 'TMGR_STAGING_OUTPUT_PENDING', ME, now, detail));
    out.push(task);
  }

  onCancel(uids: string[]): void {
    this.canceled.add(uids);
  }

  onShutdown(final: AbortedTaskState, why: Reason): void {
    const now = this.clock.now();
    const notes = [...this.collecting.values(), ...this.directing.values()].map((t) =>
      transition(t, final, ME, now, { reason: why }),
    );
    this.collecting.clear();
    this.directing.clear();
    if (notes.length > 0) this.effects.notify(notes);
  }
}
