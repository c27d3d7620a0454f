import { IllegalTransitionError } from '../../errors';
import type { Reason, TaskRecord } from '../../generated';
import type { Clock } from '../../lib/clock';
import type { NotificationDetail } from '../../states/notification';
import { COMPONENTS, type TaskState, type AbortedTaskState } from '../../states/task-model';
import { slotsByNode } from '../shared/slots-by-node';
import { transition } from '../shared/transition';
import type {
  ExecutorEffects,
  ExecutorJob,
  ExitedEvent,
  FailedEvent,
  NoticeSignal,
  StartedDetail,
} from './effects';
import { takeStreamOutput } from './exit-output';
import { Batch, heldOf, started, type Held } from './held';
import { kindFor, type ExecutorKind } from './kinds';
import { agentDiedReason, cancelReason, noSandboxReason } from './reasons';
import type { LaunchOptions } from './launch';

const EXECUTOR = COMPONENTS.executor;

/**
 * How long an exit by a signal the Executor did not send waits for a shutdown of the agent it
 * may be part of: a batch system's cancel (scancel) signals every process of the job at once,
 * and the tasks may die before the agent's own SIGTERM handler runs.
 */
export const SIGNALED_EXIT_GRACE_MS = 250;

export interface ExecutorOptions {
  /** Time between SIGTERM and SIGKILL when a task is timed out or canceled. */
  killGraceMs: number;
  /**
   * How tasks are launched; default `{ mpirun: 'mpirun', asRoot: false }`, one machine and no step
   * launcher (the agent's allocation sets `agentNode` and `srun` where it has them: LaunchOptions).
   */
  launch?: Partial<LaunchOptions>;
  /**
   * How long an exit by a signal the Executor did not send is held before it settles, so that a
   * task killed with its pilot (scancel) ends with the pilot's shutdown, not as a failure.
   * Default SIGNALED_EXIT_GRACE_MS; 0 settles at once.
   */
  signaledExitGraceMs?: number;
}

export type ShutdownState = AbortedTaskState;

/** The jobs a restarted agent holds again, and those that died with the agent before it. */
export type Adopted = Record<'kept' | 'lost', ExecutorJob[]>;

/**
 * Owner of AGENT_EXECUTING: asks the executor kind of each task's mode (kinds/) for a job and
 * starts it through `effects.start`, enforces timeoutS, stops on cancel and shutdown, and hands
 * ended tasks to output staging. Pure: processes and timers belong to the shell; results come
 * back as on*() events.
 */
export class ExecutorCore {
  private readonly tasks = new Map<string, Held>();
  /** Cancels that arrived before their task did. */
  private readonly canceledEarly = new Set<string>();
  private closed: { final: ShutdownState; reason: Reason } | undefined;
  private readonly launchOptions: LaunchOptions;
  private readonly signaledExitGraceMs: number;

  constructor(
    private readonly effects: ExecutorEffects,
    private readonly clock: Clock,
    private readonly options: ExecutorOptions,
  ) {
    this.launchOptions = { mpirun: 'mpirun', asRoot: false, ...options.launch };
    this.signaledExitGraceMs = options.signaledExitGraceMs ?? SIGNALED_EXIT_GRACE_MS;
  }

  held(): number {
    return this.tasks.size;
  }

  /** Tasks started and not ended. */
  running(): number {
    return [...this.tasks.values()].filter((h) => started(h) && h.exit === undefined).length;
  }

  /** The pilot drains: each running process gets `signal` and goes on. Returns how many. */
  signalRunning(signal: NoticeSignal): number {
    const to = [...this.tasks.values()].filter(
      (h) => started(h) && h.exit === undefined && h.job.kind === 'process',
    );
    for (const h of to) this.effects.signal(h.task.uid, signal);
    return to.length;
  }

  onTasks(tasks: TaskRecord[]): void {
    // Check the whole bulk first so a bad task cannot leave half of it transitioned.
    for (const t of tasks) {
      if (t.state !== 'AGENT_EXECUTING_PENDING') {
        throw new IllegalTransitionError(t.state, 'AGENT_EXECUTING', EXECUTOR);
      }
    }
    const b = new Batch();
    const now = this.clock.now();
    for (const task of tasks) {
      if (this.tasks.has(task.uid)) continue; // duplicate delivery
      if (this.closed !== undefined) {
        this.end(task, this.closed.final, this.closed.reason, now, b);
      } else if (this.canceledEarly.delete(task.uid)) {
        task.canceled = true;
        this.end(task, 'CANCELED', cancelReason('before it started'), now, b);
      } else if (task.sandbox === undefined) {
        this.end(task, 'FAILED', noSandboxReason(), now, b);
      } else {
        const found = kindFor(task.description.mode);
        if (!found.ok) {
          this.end(task, 'FAILED', found.reason, now, b);
          continue;
        }
        const prepared = found.kind.prepare(task, task.sandbox, this.launchOptions);
        if (!prepared.ok) {
          this.end(task, 'FAILED', prepared.reason, now, b);
          continue;
        }
        // a call's start is mostly dropped (HeldStarts): its slots come with its exit instead
        const where: NotificationDetail | undefined =
          task.slots === undefined || task.description.mode === 'function'
            ? undefined
            : { slots: slotsByNode(task.slots) };
        if (task.follows !== undefined) {
          if (where !== undefined) where.follows = task.follows;
          const before = this.tasks.get(task.follows);
          if (before !== undefined && before.exit === undefined) before.followed = true;
        }
        b.notes.push(transition(task, 'AGENT_EXECUTING', EXECUTOR, now, where));
        this.start(task, found.kind, prepared.job);
      }
    }
    b.flush(this.effects);
  }

  /**
   * An agent started again takes over what the one before it executed (its journal's; `since`:
   * when, for timeoutS): a process job on a sub-agent's node may still run there and is held
   * again without a start (that sub-agent tells its end); any other died with that agent and
   * ends E_AGENT_DIED, on to output staging (a retry is the client's). Returns both lists.
   */
  adopt(tasks: readonly { task: TaskRecord; since: number }[]): Adopted {
    const b = new Batch();
    const now = this.clock.now();
    const { kept, lost }: Adopted = { kept: [], lost: [] };
    for (const { task, since } of tasks) {
      if (this.tasks.has(task.uid) || task.sandbox === undefined) continue;
      task.state = 'AGENT_EXECUTING';
      const found = kindFor(task.description.mode);
      const prepared = found.ok
        ? found.kind.prepare(task, task.sandbox, this.launchOptions)
        : found;
      if (!prepared.ok || !found.ok) {
        this.end(task, 'FAILED', prepared.ok ? agentDiedReason() : prepared.reason, now, b);
        continue;
      }
      const h = heldOf(task, found.kind, prepared.job);
      if (prepared.job.kind === 'process' && prepared.job.node !== undefined) {
        h.launched = since; // it runs as far as anyone knows: its sub-agent says
        this.tasks.set(task.uid, h);
        kept.push(prepared.job);
        const timeoutS = task.description.timeoutS;
        if (timeoutS !== undefined) {
          this.armTimeout(h, timeoutS, Math.max(0, timeoutS - (now - since) / 1000));
        }
      } else {
        task.reason = agentDiedReason();
        lost.push(prepared.job);
        this.settle(h, null, null, now, b);
      }
    }
    b.flush(this.effects);
    return { kept, lost };
  }

  onStarted(uid: string, detail: StartedDetail): void {
    this.onStartedBulk([{ uid, ...detail }]);
  }

  onStartedBulk(events: readonly ({ uid: string } & StartedDetail)[]): void {
    for (const e of events) {
      const h = this.tasks.get(e.uid);
      if (h === undefined) continue;
      if (e.pid !== undefined) h.pid = e.pid;
      if (e.t !== undefined) h.launched ??= e.t;
      if (h.timeoutAtStart !== undefined) {
        this.armTimeout(h, h.timeoutAtStart);
        delete h.timeoutAtStart;
      }
    }
  }

  onExited(uid: string, exit: { exitCode: number | null; signal: string | null }): void {
    this.onExitedBulk([{ uid, exitCode: exit.exitCode, signal: exit.signal }]);
  }

  onExitedBulk(exits: ExitedEvent[]): void {
    const b = new Batch();
    const now = this.clock.now();
    for (const e of exits) {
      const h = this.tasks.get(e.uid);
      if (h === undefined || h.exit !== undefined) continue; // late, unknown, or held already
      if (e.t !== undefined) h.exited = e.t;
      if (e.output !== undefined) takeStreamOutput(h.task, e.output);
      if (e.signal !== null && !h.terminating && this.signaledExitGraceMs > 0) {
        this.hold(h, e);
        continue;
      }
      this.take(e.uid);
      if (!h.canceled && h.task.reason === undefined) {
        const why = h.kind.exitReason?.(h.task, e);
        if (why !== undefined) h.task.reason = why;
      }
      if (e.value !== undefined && !h.canceled) h.task.result = e.value;
      this.settle(h, e.exitCode, e.signal, now, b);
    }
    b.flush(this.effects);
  }

  onStartFailed(uid: string, error: { code: string; message: string }): void {
    this.onStartFailedBulk([{ uid, code: error.code, message: error.message }]);
  }

  onStartFailedBulk(failures: readonly FailedEvent[]): void {
    const b = new Batch();
    const now = this.clock.now();
    for (const f of failures) {
      const h = this.take(f.uid);
      if (h === undefined) continue;
      if (!h.canceled) h.task.reason = h.kind.startFailure(h.task, h.job, f, h.pid);
      // a follow-on start dropped from its helper's queue never ran
      else if (f.code === 'ECANCELED') h.task.reason = cancelReason('before it started');
      this.settle(h, null, null, now, b);
    }
    b.flush(this.effects);
  }

  /**
   * Jobs that became ready (services) at their endpoints: the task says so (SERVICE_READY) and
   * its startup deadline goes. A late or repeated report is ignored.
   */
  onReadyBulk(events: readonly { uid: string; endpoint: string }[]): void {
    const b = new Batch();
    const now = this.clock.now();
    for (const e of events) {
      const h = this.tasks.get(e.uid);
      if (h?.ready !== false || h.terminating || h.exit !== undefined) continue;
      h.ready = true;
      h.task.endpoint = e.endpoint;
      h.startup?.cancel();
      b.notes.push({
        kind: 'service',
        uid: e.uid,
        attempt: h.task.attempt,
        state: 'SERVICE_READY',
        ts: now,
        component: EXECUTOR,
        detail: { endpoint: e.endpoint },
      });
    }
    b.flush(this.effects);
  }

  /**
   * Ready jobs (services) that stopped answering their liveness probes: killed at once (SIGKILL
   * reaches a stopped process, SIGTERM would wait for it), with the kind's reason; a retry, if
   * it has retries left, is the ManagerOutputStager's.
   */
  onUnhealthyBulk(events: readonly { uid: string; misses: number }[]): void {
    for (const e of events) {
      const h = this.tasks.get(e.uid);
      const why = h?.ready === true && !h.terminating && h.exit === undefined;
      const reason = why ? h.kind.readiness?.unhealthy?.(h.task, h.job, e.misses) : undefined;
      if (reason === undefined) continue;
      h!.task.reason = reason;
      h!.terminating = true;
      this.effects.stop(e.uid, 'kill');
    }
  }

  /**
   * Held tasks are killed (CANCELED on exit); unknown uids are canceled when they arrive. A
   * ready service is stopped instead: serving until asked to stop is its whole job, so it goes
   * on to output staging and ends DONE.
   */
  onCancel(uids: string[]): void {
    for (const uid of uids) {
      const h = this.tasks.get(uid);
      if (h === undefined) {
        this.canceledEarly.add(uid);
      } else if (h.ready === true) {
        h.task.stopped = true;
        if (h.exit === undefined) this.terminate(h);
      } else if (!h.canceled) {
        h.canceled = true;
        h.task.canceled = true;
        h.task.reason = cancelReason('while it ran');
        if (h.exit === undefined) this.terminate(h);
      }
    }
  }

  /**
   * The agent is going away: kill everything now and finalize every held task without waiting
   * for exits (late ones are ignored). A task already being canceled ends CANCELED, not `final`;
   * one whose exit by a signal is held ends with the shutdown (the signal was likely its part);
   * a ready service ends DONE (it served until its pilot ended). Tasks that arrive afterwards
   * are finalized on receipt.
   */
  onShutdown(final: ShutdownState, reason: Reason, leaveToClient = false): void {
    this.closed = { final, reason };
    const b = new Batch();
    const now = this.clock.now();
    for (const h of [...this.tasks.values()]) {
      this.take(h.task.uid);
      if (h.exit === undefined) this.effects.stop(h.task.uid, 'kill');
      if (h.canceled) this.end(h.task, 'CANCELED', h.task.reason ?? reason, now, b);
      else if (h.ready === true) this.stopped(h.task, now, b);
      // the pilot's time is up: the client retries it elsewhere if it may (pilot-recovery.ts)
      else if (!leaveToClient) this.end(h.task, final, reason, now, b);
    }
    b.flush(this.effects);
  }

  private start(task: TaskRecord, kind: ExecutorKind, job: ExecutorJob): void {
    const h = heldOf(task, kind, job);
    this.tasks.set(task.uid, h);
    this.effects.start(job);
    if (kind.readiness !== undefined) {
      const r = kind.readiness;
      h.ready = false;
      const ms = r.withinS(task) * 1000;
      h.startup = this.clock.setTimeout(() => this.notReady(h, r.notReady(task, job)), ms);
    }
    const timeoutS = task.description.timeoutS;
    // a follow-on start waits for the task before it: its time runs from its own start
    if (timeoutS !== undefined && task.follows !== undefined) h.timeoutAtStart = timeoutS;
    else if (timeoutS !== undefined) this.armTimeout(h, timeoutS);
  }

  /** `inS`: when from now (default timeoutS: it starts now). */
  private armTimeout(h: Held, timeoutS: number, inS = timeoutS): void {
    h.timers.push(this.clock.setTimeout(() => this.timedOut(h, timeoutS), inS * 1000));
  }

  private timedOut(h: Held, timeoutS: number): void {
    if (this.tasks.get(h.task.uid) !== h || h.terminating || h.exit !== undefined) return;
    h.task.reason = {
      code: 'E_TASK_TIMEOUT',
      message: `task ran longer than its timeoutS of ${timeoutS} s and was killed`,
      component: EXECUTOR,
      detail: { timeoutS },
    };
    this.terminate(h);
  }

  private notReady(h: Held, why: Reason): void {
    if (this.tasks.get(h.task.uid) !== h || h.ready !== false || h.terminating) return;
    if (h.exit !== undefined) return;
    h.task.reason = why;
    this.terminate(h);
  }

  /**
   * 'term' now, 'kill' after the grace period unless the task has ended by then. Once its main
   * process has exited, what it left behind is the spawner helper's to end, with the same grace
   * (process/helper/tracking.ts): the SIGKILL is not lost with this timer.
   */
  private terminate(h: Held): void {
    if (h.terminating) return;
    h.terminating = true;
    const uid = h.task.uid;
    this.effects.stop(uid, 'term');
    h.timers.push(
      this.clock.setTimeout(() => {
        if (this.tasks.get(uid) === h) this.effects.stop(uid, 'kill');
      }, this.options.killGraceMs),
    );
  }

  /**
   * Holds an exit by a signal we did not send: if the agent shuts down within the grace period,
   * the task ends with the shutdown (a batch system's cancel of the whole job); else it settles.
   */
  private hold(h: Held, exit: ExitedEvent): void {
    h.exit = exit;
    h.timers.push(
      this.clock.setTimeout(() => {
        if (this.tasks.get(h.task.uid) !== h) return;
        const b = new Batch();
        this.take(h.task.uid);
        this.settle(h, exit.exitCode, exit.signal, this.clock.now(), b);
        b.flush(this.effects);
      }, this.signaledExitGraceMs),
    );
  }

  /** Stops holding a task: forget it and cancel its timers. */
  private take(uid: string): Held | undefined {
    const h = this.tasks.get(uid);
    if (h === undefined) return undefined;
    this.tasks.delete(uid);
    for (const t of h.timers) t.cancel();
    h.startup?.cancel();
    return h;
  }

  /** The process is gone (or never ran): CANCELED if asked, else on to output staging. */
  private settle(
    h: Held,
    exitCode: number | null,
    signal: string | null,
    now: number,
    b: Batch,
  ): void {
    const task = h.task;
    task.exitCode = exitCode;
    task.signal = signal;
    const detail: NotificationDetail = { exitCode, signal };
    if (task.reason !== undefined) detail.reason = task.reason;
    if (task.slots !== undefined) detail.slots = slotsByNode(task.slots);
    if (h.launched !== undefined) detail.launched = h.launched;
    if (h.exited !== undefined) detail.exited = h.exited;
    if (h.followed === true) detail.followed = true;
    if (h.canceled) {
      b.notes.push(transition(task, 'CANCELED', EXECUTOR, now, detail));
    } else {
      b.notes.push(transition(task, 'AGENT_STAGING_OUTPUT_PENDING', EXECUTOR, now, detail));
      b.forward.push(task);
    }
    b.release.push(task);
  }

  /** A ready service whose agent goes away: DONE, as one stopped by a cancel would end. */
  private stopped(task: TaskRecord, now: number, b: Batch): void {
    task.stopped = true;
    b.notes.push(transition(task, 'DONE', EXECUTOR, now, { exitCode: null, signal: null }));
    b.release.push(task);
  }

  /** Finalizes a task that has no live process. */
  private end(task: TaskRecord, to: TaskState, reason: Reason, now: number, b: Batch): void {
    task.reason = reason;
    b.notes.push(transition(task, to, EXECUTOR, now, { reason }));
    b.release.push(task);
  }
}
