import type { Reason, TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { Notification, NotificationDetail } from '../../states/notification';
import { COMPONENTS, type AbortedTaskState } from '../../states/task-model';
import { cancelIfAsked } from '../shared/canceled';
import { CancelSet, reason } from '../shared/reasons';
import {
  agentSteps,
  directiveName,
  failureMessage,
  type StagingStep,
  type StepFailure,
} from '../shared/staging-paths';
import { checkArrivals, transition } from '../shared/transition';
import { sharesWorkdir } from '../shared/workdir';
import { ArrivalOrder, keepsOrder } from './arrival-order';
import type { AgentInputStagerEffects } from './effects';

const ME = COMPONENTS.agentInputStager;

/**
 * Whether a task gets a directory of its own, `<pilot sandbox>/<uid>`: every task does unless it
 * asks for another working directory (`workdir`, 'pilot' among them, or `sandbox: false`), so
 * a sweep whose tasks all write out.txt loses nothing (RADICAL-Pilot's default too). One that
 * asks still gets one when it says `sandbox: true` or needs one for files pilotfish makes there:
 * staging directives name files in it, output 'files' writes `stdout` and `stderr` in it
 * (services always do), preExec/postExec leave their status files, MPI launches their hostfile.
 */
export function needsOwnSandbox(task: TaskRecord): boolean {
  const d = task.description;
  if (d.sandbox === true) return true;
  if (!sharesWorkdir(d)) return true;
  if ((d.inputStaging?.length ?? 0) > 0 || (d.outputStaging?.length ?? 0) > 0) return true;
  if (d.mode === 'function') return false;
  if (task.output !== 'stream') return true;
  const steps = (d.preExec?.length ?? 0) > 0 || (d.postExec?.length ?? 0) > 0;
  return steps || (d.ranks ?? 1) > 1 || d.launch === 'mpirun';
}

/** Where a task's stdout and stderr go: services' to files, a call has none (undefined). */
export function outputOf(
  d: TaskRecord['description'],
  pilotDefault: OutputMode,
): OutputMode | undefined {
  if (d.mode === 'function') return undefined;
  if (d.mode === 'service') return 'files';
  return d.output ?? pilotDefault;
}

export type OutputMode = 'files' | 'stream';

/**
 * A pilot's agent.output unless it says: streaming makes no file or directory per task and
 * runs more tasks per second (docs/output.md, docs/performance.md).
 */
export const DEFAULT_OUTPUT: OutputMode = 'stream';

/**
 * Owns AGENT_STAGING_INPUT: gives each task its sandbox inside the pilot's sandbox (see
 * needsOwnSandbox), then has its input directives performed (a task with none goes straight on).
 */
export class AgentInputStagerCore {
  /** Tasks whose sandbox is being made. */
  private readonly staging = new Map<string, TaskRecord>();
  /** Tasks whose input directives are being performed. */
  private readonly directing = new Map<string, TaskRecord>();
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
    /** The pilot's agent.output: where executables' output goes unless they say. */
    private readonly defaultOutput: OutputMode = DEFAULT_OUTPUT,
    /** Where tasks' own directories go: the pilot's sandbox, or its agent.taskDirs here. */
    private readonly taskRoot: string = pilotSandbox,
  ) {}

  onTasks(tasks: TaskRecord[]): void {
    checkArrivals(tasks, 'AGENT_STAGING_INPUT_PENDING', 'AGENT_STAGING_INPUT', ME);
    const now = this.clock.now();
    const notes: Notification[] = [];
    const work: TaskRecord[] = [];
    for (const task of tasks) {
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      notes.push(transition(task, 'AGENT_STAGING_INPUT', ME, now));
      const output = outputOf(task.description, this.defaultOutput);
      if (output !== undefined) task.output = output;
      task.sandbox = needsOwnSandbox(task) ? `${this.taskRoot}/${task.uid}` : this.pilotSandbox;
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
    const work: { uid: string; steps: StagingStep[] }[] = [];
    for (const r of this.order.settle(results)) {
      const task = this.staging.get(r.uid);
      if (task === undefined) continue;
      this.staging.delete(r.uid);
      // canceled while its sandbox was made
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      if (r.error !== undefined) {
        const why = reason(
          'E_STAGING',
          `cannot create the task sandbox ${task.sandbox ?? ''}: ${r.error.message}`,
          ME,
          { errno: r.error.code },
        );
        this.fail(task, why, now, notes, false);
        continue;
      }
      if ((task.staging?.input.length ?? 0) === 0) {
        this.done(task, now, notes, out);
        continue;
      }
      const plan = agentSteps(task, 'input', this.pilotSandbox);
      if ('error' in plan) {
        const message = `${directiveName('input', plan.index)}: ${plan.error}`;
        const why = reason('E_STAGING', message, ME, { directive: plan.index });
        this.fail(task, why, now, notes, true);
        continue;
      }
      this.directing.set(task.uid, task);
      work.push({ uid: task.uid, steps: plan.steps });
    }
    if (notes.length > 0) this.effects.notify(notes);
    if (out.length > 0) this.effects.forward(out);
    if (work.length > 0) this.effects.stageInput(work);
  }

  /** The input directives of tasks were performed: failures name the directive and file. */
  onInputStaged(results: { uid: string; failures: StepFailure[] }[]): void {
    const now = this.clock.now();
    const notes: Notification[] = [];
    const out: TaskRecord[] = [];
    for (const r of results) {
      const task = this.directing.get(r.uid);
      if (task === undefined) continue;
      this.directing.delete(r.uid);
      // canceled while its directives were performed
      if (cancelIfAsked(task, this.canceled, ME, now, notes)) continue;
      const f = r.failures[0];
      if (f === undefined) {
        this.done(task, now, notes, out);
        continue;
      }
      const why = reason('E_STAGING', failureMessage(task, 'input', f), ME, {
        directive: f.index,
        path: f.path,
        errno: f.errno,
      });
      this.fail(task, why, now, notes, true);
    }
    if (notes.length > 0) this.effects.notify(notes);
    if (out.length > 0) this.effects.forward(out);
  }

  private done(task: TaskRecord, now: number, notes: Notification[], out: TaskRecord[]): void {
    const own = task.sandbox !== undefined && task.sandbox !== this.pilotSandbox;
    // where to find what it writes: a sandbox of its own, and where its output goes (said for
    // both modes: a reader that guessed would guess wrong for tasks of a pilot of the other)
    let detail: NotificationDetail | undefined = own ? { sandbox: task.sandbox! } : undefined;
    if (task.output !== undefined) (detail ??= {}).output = task.output;
    notes.push(transition(task, 'AGENT_SCHEDULING_PENDING', ME, now, detail));
    out.push(task);
  }

  /** `made`: the sandbox exists, so the client learns where, to look at what is there. */
  private fail(
    task: TaskRecord,
    why: Reason,
    now: number,
    notes: Notification[],
    made: boolean,
  ): void {
    task.reason = why;
    const detail = made && task.sandbox !== undefined ? { sandbox: task.sandbox } : {};
    notes.push(transition(task, 'FAILED', ME, now, { ...detail, reason: why }));
  }

  /** Tasks being staged now are canceled when their staging ends; later arrivals on receipt. */
  onCancel(uids: string[]): void {
    this.canceled.add(uids);
  }

  onShutdown(final: AbortedTaskState, why: Reason): void {
    const now = this.clock.now();
    const notes = [...this.staging.values(), ...this.directing.values()].map((t) =>
      transition(t, final, ME, now, { reason: why }),
    );
    this.staging.clear();
    this.order.clear();
    this.directing.clear();
    if (notes.length > 0) this.effects.notify(notes);
  }
}
