import { IllegalTransitionError } from '../../errors';
import type { Reason, TaskRecord } from '../../generated';
import type { Clock, Timer } from '../../lib/clock';
import type { Notification, NotificationDetail } from '../../states/notification';
import { COMPONENTS, type TaskState } from '../../states/task-model';
import { transition } from '../shared/transition';
import type { ExecutorEffects, ExitedEvent, FailedEvent, SpawnSpec, StartedEvent } from './effects';
import { buildLaunch, type Launch, type LaunchOptions } from './launch';

const EXECUTOR = COMPONENTS.executor;

export interface ExecutorOptions {
  /** Time between SIGTERM and SIGKILL when a task is timed out or canceled. */
  killGraceMs: number;
  /**
   * How tasks are launched; default `{ mpirun: 'mpirun', asRoot: false }` and no `slurm` (the
   * agent's wiring sets `slurm` when it runs inside a Slurm allocation: see LaunchOptions).
   */
  launch?: Partial<LaunchOptions>;
}

export type ShutdownState = 'FAILED' | 'CANCELED';

interface Held {
  task: TaskRecord;
  launch: Launch;
  pid?: number;
  canceled: boolean;
  /** SIGTERM sent; SIGKILL follows after the grace period. */
  terminating: boolean;
  timers: Timer[];
}

const REASON_BY_ERRNO: Record<string, Reason['code']> = {
  ENOENT: 'E_EXEC_NOT_FOUND',
  EACCES: 'E_EXEC_PERMISSION',
};

/** One handler call's effects, so each kind goes out as a single bulk. */
class Batch {
  readonly notes: Notification[] = [];
  readonly forward: TaskRecord[] = [];
  readonly release: TaskRecord[] = [];

  flush(effects: ExecutorEffects): void {
    if (this.notes.length > 0) effects.notify(this.notes);
    if (this.forward.length > 0) effects.forward(this.forward);
    if (this.release.length > 0) effects.release(this.release);
  }
}

/**
 * Owner of AGENT_EXECUTING: starts each task's process through `effects.spawn`, enforces
 * timeoutS, kills on cancel and shutdown, and hands exited tasks to output staging. Pure:
 * processes and timers belong to the shell; results come back as on*() events.
 */
export class ExecutorCore {
  private readonly tasks = new Map<string, Held>();
  /** Cancels that arrived before their task did. */
  private readonly canceledEarly = new Set<string>();
  private closed: { final: ShutdownState; reason: Reason } | undefined;
  private readonly launchOptions: LaunchOptions;

  constructor(
    private readonly effects: ExecutorEffects,
    private readonly clock: Clock,
    private readonly options: ExecutorOptions,
  ) {
    const slurm = options.launch?.slurm;
    this.launchOptions = {
      mpirun: options.launch?.mpirun ?? 'mpirun',
      asRoot: options.launch?.asRoot ?? false,
      ...(slurm === undefined ? {} : { slurm }),
    };
  }

  held(): number {
    return this.tasks.size;
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
        const built = buildLaunch(task, { ...this.launchOptions, workDir: task.sandbox });
        if (!built.ok) {
          this.end(task, 'FAILED', built.reason, now, b);
          continue;
        }
        b.notes.push(transition(task, 'AGENT_EXECUTING', EXECUTOR, now));
        this.start(task, task.sandbox, built.launch);
      }
    }
    b.flush(this.effects);
  }

  onStarted(uid: string, pid: number): void {
    this.onStartedBulk([{ uid, pid }]);
  }

  onStartedBulk(events: StartedEvent[]): void {
    for (const e of events) {
      const h = this.tasks.get(e.uid);
      if (h !== undefined) h.pid = e.pid;
    }
  }

  onExited(uid: string, exit: { exitCode: number | null; signal: string | null }): void {
    this.onExitedBulk([{ uid, exitCode: exit.exitCode, signal: exit.signal }]);
  }

  onExitedBulk(exits: ExitedEvent[]): void {
    const b = new Batch();
    const now = this.clock.now();
    for (const e of exits) {
      const h = this.take(e.uid);
      if (h === undefined) continue; // late exit after shutdown, or unknown
      this.settle(h, e.exitCode, e.signal, now, b);
    }
    b.flush(this.effects);
  }

  onSpawnFailed(uid: string, error: { code: string; message: string }): void {
    this.onSpawnFailedBulk([{ uid, code: error.code, message: error.message }]);
  }

  onSpawnFailedBulk(failures: FailedEvent[]): void {
    const b = new Batch();
    const now = this.clock.now();
    for (const f of failures) {
      const h = this.take(f.uid);
      if (h === undefined) continue;
      if (!h.canceled) h.task.reason = spawnFailureReason(h, f);
      this.settle(h, null, null, now, b);
    }
    b.flush(this.effects);
  }

  /** Held tasks are killed (CANCELED on exit); unknown uids are canceled when they arrive. */
  onCancel(uids: string[]): void {
    for (const uid of uids) {
      const h = this.tasks.get(uid);
      if (h === undefined) {
        this.canceledEarly.add(uid);
      } else if (!h.canceled) {
        h.canceled = true;
        h.task.canceled = true;
        h.task.reason = cancelReason('while it ran');
        this.terminate(h);
      }
    }
  }

  /**
   * The agent is going away: kill everything now and finalize every held task without waiting
   * for exits (late ones are ignored). A task already being canceled ends CANCELED, not `final`.
   * Tasks that arrive afterwards are finalized on receipt.
   */
  onShutdown(final: ShutdownState, reason: Reason): void {
    this.closed = { final, reason };
    const b = new Batch();
    const now = this.clock.now();
    for (const h of [...this.tasks.values()]) {
      this.take(h.task.uid);
      this.effects.kill(h.task.uid, 'SIGKILL');
      if (h.canceled) this.end(h.task, 'CANCELED', h.task.reason ?? reason, now, b);
      else this.end(h.task, final, reason, now, b);
    }
    b.flush(this.effects);
  }

  private start(task: TaskRecord, sandbox: string, launch: Launch): void {
    const h: Held = { task, launch, canceled: false, terminating: false, timers: [] };
    this.tasks.set(task.uid, h);
    this.effects.spawn(spawnSpec(task, sandbox, launch));
    const timeoutS = task.description.timeoutS;
    if (timeoutS !== undefined) {
      h.timers.push(this.clock.setTimeout(() => this.timedOut(h, timeoutS), timeoutS * 1000));
    }
  }

  private timedOut(h: Held, timeoutS: number): void {
    if (this.tasks.get(h.task.uid) !== h || h.terminating) return;
    h.task.reason = {
      code: 'E_TASK_TIMEOUT',
      message: `task ran longer than its timeoutS of ${timeoutS} s and was killed`,
      component: EXECUTOR,
      detail: { timeoutS },
    };
    this.terminate(h);
  }

  /** SIGTERM now, SIGKILL after the grace period unless the task has exited by then. */
  private terminate(h: Held): void {
    if (h.terminating) return;
    h.terminating = true;
    const uid = h.task.uid;
    this.effects.kill(uid, 'SIGTERM');
    h.timers.push(
      this.clock.setTimeout(() => {
        if (this.tasks.get(uid) === h) this.effects.kill(uid, 'SIGKILL');
      }, this.options.killGraceMs),
    );
  }

  /** Stops holding a task: forget it and cancel its timers. */
  private take(uid: string): Held | undefined {
    const h = this.tasks.get(uid);
    if (h === undefined) return undefined;
    this.tasks.delete(uid);
    for (const t of h.timers) t.cancel();
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
    if (h.canceled) {
      b.notes.push(transition(task, 'CANCELED', EXECUTOR, now, detail));
    } else {
      b.notes.push(transition(task, 'AGENT_STAGING_OUTPUT_PENDING', EXECUTOR, now, detail));
      b.forward.push(task);
    }
    b.release.push(task);
  }

  /** Finalizes a task that has no live process. */
  private end(task: TaskRecord, to: TaskState, reason: Reason, now: number, b: Batch): void {
    task.reason = reason;
    b.notes.push(transition(task, to, EXECUTOR, now, { reason }));
    b.release.push(task);
  }
}

function spawnSpec(task: TaskRecord, sandbox: string, launch: Launch): SpawnSpec {
  const spec: SpawnSpec = {
    uid: task.uid,
    executable: launch.executable,
    args: launch.args,
    env: launch.env,
    cwd: task.description.workdir ?? sandbox,
    stdoutPath: `${sandbox}/stdout`,
    stderrPath: `${sandbox}/stderr`,
  };
  if (launch.files.length > 0) spec.files = launch.files;
  if (launch.killScope !== undefined) spec.killScope = launch.killScope;
  return spec;
}

function cancelReason(when: string): Reason {
  return { code: 'E_CANCELED', message: `task was canceled ${when}`, component: EXECUTOR };
}

function noSandboxReason(): Reason {
  return {
    code: 'E_NO_SANDBOX',
    message: 'task reached the Executor without a sandbox directory',
    component: EXECUTOR,
  };
}

function spawnFailureReason(h: Held, f: FailedEvent): Reason {
  const exe = h.task.description.executable;
  const { method, executable } = h.launch;
  // Under mpirun or srun the spawner runs the launcher: a failure to start it is about that.
  const what = method === 'fork' ? `'${exe}'` : `the launcher '${executable}' of '${exe}'`;
  const message =
    h.pid === undefined
      ? `cannot execute ${what}: ${f.message} (${f.code})`
      : `lost ${what} (pid ${h.pid}): ${f.message} (${f.code})`;
  const detail: Record<string, unknown> = { errno: f.code };
  if (method !== 'fork') detail.launcher = executable;
  return {
    code: REASON_BY_ERRNO[f.code] ?? 'E_EXEC_FAILED',
    message,
    component: EXECUTOR,
    detail,
  };
}
