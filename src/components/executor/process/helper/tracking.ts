/**
 * How the Node spawner helper (main.ts) keeps hold of every process of its tasks, so that
 * a kill, the end of a task and the end of the helper reach all of them (docs/launch-methods.md,
 * "Killing a task"). pf-spawner.c does the same in C: keep the two in step.
 *   - 'cgroup' (task-cgroup.ts): each task runs in a cgroup of its own; SIGTERM goes to every
 *     process listed in it, SIGKILL through cgroup.kill, and the cgroup is removed once empty.
 *   - 'proc' (kill-session.ts): each task's group, session, descendants and marked orphans, found
 *     in /proc.
 * When a task's main process ends (DONE or not), what it leaves behind gets SIGTERM, then SIGKILL
 * after the kill grace, as Slurm ends a step. The helper reports the exit at once; the leftovers'
 * end does not delay it. That SIGKILL comes from the helper, so it is not lost when the main
 * process exits during the grace of a cancel or a timeout and the Executor forgets the task.
 * Tasks with killScope 'process' (srun) are left out (signaled alone, no cgroup, nothing ended
 * after them): srun ends its own step, and its shepherd child, which cancels the step once srun
 * is gone, must outlive it. Node built-ins only.
 */
import type { ChildProcess } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import * as path from 'node:path';
import { errnoOf, errnoText } from '../../../../lib/errno-text';
import { killProcesses, sweep, type SweepTarget } from './kill-session';
import type { KillSignal, TrackingKind } from './protocol';
import { cgroupProcs, killCgroup, oomKillsOf, removeTree, whenEmpty } from './task-cgroup';

/** One task of the helper. */
export interface TrackedTask {
  uid: string;
  /** Numbers the task within the helper: its cgroup's name and the end of its mark. */
  serial: number;
  /** PF_TASK_MARK of its processes. */
  mark: string;
  pid?: number;
  processOnly: boolean;
  /** Its cgroup (cgroup tracking, unless processOnly). */
  cgroup?: string;
  /** cgroup v2 limits to write into its cgroup before it starts (SpawnSpec.cgroupLimits). */
  limits?: Record<string, string>;
  /** Its cgroup got a memory.max: its exit says the OOM kills. */
  memoryLimited?: boolean;
}

/** A task could not be put where it is tracked: it fails to start with this code and message. */
export class TrackingError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface TrackingOptions {
  killGraceMs: number;
  /** An error event's message (a failed kill, a cgroup that cannot be removed). */
  error(message: string): void;
  /** A leftover the stopping helper waited for is gone: it may exit once idle(). */
  settled(): void;
  /** Whether `pid` is the main process of a running task (a pid reused after an ended one). */
  runningMain(pid: number): boolean;
}

export interface Tracking {
  readonly kind: TrackingKind;
  /** Runs `spawn` so that the task's process starts tracked. Throws TrackingError. */
  start(task: TrackedTask, spawn: () => ChildProcess): ChildProcess;
  /** Signals running tasks (those of one chunk of input together). */
  kill(tasks: readonly TrackedTask[], signal: KillSignal): void;
  /** The OOM kills in the task's cgroup (0 without a memory limit): read before ended(). */
  oomKills(task: TrackedTask): number;
  /** The task's main process has exited (or never started): ends what it left behind. */
  ended(task: TrackedTask): void;
  /** The helper stops: SIGKILL to every task and to every leftover. */
  stop(running: readonly TrackedTask[]): void;
  /** Nothing left to wait for before the helper exits. */
  idle(): boolean;
  /** The helper exits: give back what it made (its cgroup). */
  leave(): void;
}

/**
 * Runs `spawn` with the helper inside the cgroup v1 directories `dirs` (SpawnSpec.cgroups, made
 * and limited by the pool), so the task starts in them, then moves the helper back two levels
 * up, where it was (`<own>/<base>/<task>`). Throws TrackingError when one cannot be entered.
 */
export function inCgroups(dirs: readonly string[], spawn: () => ChildProcess): ChildProcess {
  if (dirs.length === 0) return spawn();
  const pid = String(process.pid);
  const back = (n: number): void => {
    for (const dir of dirs.slice(0, n)) {
      writeFileSync(path.join(dir, '..', '..', 'cgroup.procs'), pid);
    }
  };
  let entered = 0;
  try {
    for (const dir of dirs) {
      writeFileSync(path.join(dir, 'cgroup.procs'), pid);
      entered += 1;
    }
  } catch (e) {
    back(entered);
    const dir = dirs[entered]!;
    throw new TrackingError(errnoOf(e), `cannot enter the task's cgroup '${dir}': ${text(e)}`);
  }
  try {
    return spawn();
  } finally {
    back(entered);
  }
}

/** How long task ends are gathered into one /proc sweep (proc tracking). */
export const SWEEP_DELAY_MS = 50;

/** Tracking by /proc: groups, sessions, descendants and marks. */
export class ProcTracking implements Tracking {
  readonly kind = 'proc';
  /** Ended tasks waiting for the next sweep. */
  private ended_: TrackedTask[] = [];
  private sweepTimer: NodeJS.Timeout | undefined;
  /** Ended tasks whose leftovers got SIGTERM: SIGKILL when the timer fires. */
  private readonly lingering = new Map<TrackedTask, NodeJS.Timeout>();
  private stopping = false;

  constructor(private readonly opts: TrackingOptions) {}

  start(_task: TrackedTask, spawn: () => ChildProcess): ChildProcess {
    return spawn();
  }

  oomKills(): number {
    return 0;
  }

  kill(tasks: readonly TrackedTask[], signal: KillSignal): void {
    this.signal(tasks, signal, () => true);
  }

  ended(task: TrackedTask): void {
    if (task.processOnly || task.pid === undefined || this.stopping) return;
    // One sweep for the tasks that end close together: a scan of /proc costs ~2 ms here.
    this.ended_.push(task);
    this.sweepTimer ??= setTimeout(() => this.sweepEnded(), SWEEP_DELAY_MS);
  }

  stop(running: readonly TrackedTask[]): void {
    this.stopping = true;
    if (this.sweepTimer !== undefined) clearTimeout(this.sweepTimer);
    for (const timer of this.lingering.values()) clearTimeout(timer);
    const left = [...this.ended_, ...this.lingering.keys()];
    this.ended_ = [];
    this.lingering.clear();
    const ended = new Set(left);
    this.signal([...running, ...left], 'SIGKILL', (t) => !ended.has(t));
  }

  idle(): boolean {
    return true; // SIGKILL cannot be ignored: nothing to wait for
  }

  leave(): void {}

  private sweepEnded(): void {
    this.sweepTimer = undefined;
    const tasks = this.ended_;
    this.ended_ = [];
    const found = this.signal(tasks, 'SIGTERM', () => false);
    tasks.forEach((t, i) => {
      if (found[i]! === 0) return;
      const timer = setTimeout(() => {
        this.lingering.delete(t);
        this.signal([t], 'SIGKILL', () => false);
      }, this.opts.killGraceMs);
      this.lingering.set(t, timer);
    });
  }

  /**
   * Signals the tasks' processes in one sweep; `running(t)`: t's main process runs (its group is
   * signaled; a srun task is signaled alone only then). Returns what was found per task.
   */
  private signal(
    tasks: readonly TrackedTask[],
    signal: KillSignal,
    running: (t: TrackedTask) => boolean,
  ): number[] {
    const targets: SweepTarget[] = [];
    const index: number[] = [];
    const alone: number[] = [];
    tasks.forEach((t, i) => {
      if (t.pid === undefined) return;
      if (t.processOnly) {
        if (running(t)) alone.push(t.pid);
        return;
      }
      index[i] = targets.length;
      const group = running(t);
      // An ended task's session may be gone and its number reused by a new task's: then only
      // its mark finds what it left.
      const sid = group || !this.opts.runningMain(t.pid) ? t.pid : undefined;
      targets.push({ ...(sid === undefined ? {} : { sid }), group, mark: t.mark, signal });
    });
    const { found, errors } = sweep(targets);
    for (const message of [...errors, ...killProcesses(alone, signal)]) this.opts.error(message);
    return tasks.map((_, i) => (index[i] === undefined ? 0 : found[index[i]]!));
  }
}

/**
 * How the pool set up the cgroup v2 tree for limits (pool-limits-v2.ts): `limits`, controllers
 * are enabled in the base, so a helper lives in `<home>/helper` (a cgroup with processes cannot
 * give controllers to those below it) and enables them in its home; `outer`, where the agent
 * runs when that is not the base's parent.
 */
export interface CgroupLayout {
  limits: boolean;
  outer?: string;
}

/** Tracking by a cgroup per task under the helper's home, `<base>/<helper pid>`. */
export class CgroupTracking implements Tracking {
  readonly kind = 'cgroup';
  private readonly home: string;
  /** Where the agent runs: srun tasks start there, and the helper goes there at its end. */
  private readonly outer: string;
  /** Its own cgroup's cgroup.procs, open: the helper moves back there after each spawn. */
  private readonly homeProcs: number;
  private readonly lingering = new Map<TrackedTask, { timer?: NodeJS.Timeout; stop?(): void }>();
  private stopping = false;

  /** Moves the helper into its home under `base`; throws TrackingError saying why it cannot. */
  constructor(
    private readonly base: string,
    private readonly opts: TrackingOptions,
    private readonly layout: CgroupLayout = { limits: false },
  ) {
    this.home = path.join(base, String(process.pid));
    this.outer = layout.outer ?? path.dirname(base);
    const own = layout.limits ? path.join(this.home, 'helper') : this.home;
    let step = 'create';
    let fd: number | undefined;
    try {
      mkdirSync(this.home);
      if (layout.limits) mkdirSync(own);
      step = 'move into';
      fd = openSync(path.join(own, 'cgroup.procs'), 'w');
      writeSync(fd, String(process.pid));
      step = 'enable the controllers of';
      if (layout.limits) enableControllers(this.home);
    } catch (e) {
      if (fd !== undefined) closeSync(fd);
      if (step === 'enable the controllers of') this.moveOut();
      for (const dir of [own, this.home]) rmdirQuiet(dir);
      throw new TrackingError(errnoOf(e), `cannot ${step} '${this.home}': ${text(e)}`);
    }
    this.homeProcs = fd;
  }

  oomKills(task: TrackedTask): number {
    if (task.memoryLimited !== true || task.cgroup === undefined) return 0;
    try {
      return oomKillsOf(readFileSync(path.join(task.cgroup, 'memory.events'), 'utf8'));
    } catch {
      return 0;
    }
  }

  private outerProcs(): string {
    return path.join(this.outer, 'cgroup.procs');
  }

  /** Back to where the agent runs, after a failed setup (its error is the setup's). */
  private moveOut(): void {
    try {
      writeFileSync(this.outerProcs(), String(process.pid));
    } catch {
      // the setup's failure is what is reported
    }
  }

  start(task: TrackedTask, spawn: () => ChildProcess): ChildProcess {
    if (task.processOnly) {
      // srun runs where the agent runs, as without cgroups: no kill of a cgroup of ours (the
      // pool's, after this helper died) may reach its shepherd.
      try {
        writeFileSync(this.outerProcs(), String(process.pid));
      } catch (e) {
        throw new TrackingError(
          errnoOf(e),
          `cannot start the task outside the task cgroups: ${text(e)}`,
        );
      }
      try {
        return spawn();
      } finally {
        writeSync(this.homeProcs, String(process.pid));
      }
    }
    const dir = path.join(this.home, String(task.serial));
    try {
      mkdirSync(dir);
    } catch (e) {
      throw new TrackingError(errnoOf(e), `cannot create the task's cgroup '${dir}': ${text(e)}`);
    }
    for (const [file, value] of Object.entries(task.limits ?? {})) {
      const why = file.includes('/') ? 'not a file name' : writeLimit(dir, file, value);
      if (why === undefined) task.memoryLimited ||= file === 'memory.max';
      else {
        this.opts.error(
          `cannot set ${file} of the task's cgroup '${dir}': ${why}: it runs without`,
        );
      }
    }
    try {
      // The helper moves into the task's cgroup for the fork: the child starts inside it, before
      // it can run anything, and the helper moves back (Node cannot place the child itself).
      writeFileSync(path.join(dir, 'cgroup.procs'), String(process.pid));
    } catch (e) {
      rmdirSync(dir);
      throw new TrackingError(errnoOf(e), `cannot enter the task's cgroup '${dir}': ${text(e)}`);
    }
    task.cgroup = dir;
    try {
      return spawn();
    } finally {
      writeSync(this.homeProcs, String(process.pid)); // cannot fail where the move in worked
    }
  }

  kill(tasks: readonly TrackedTask[], signal: KillSignal): void {
    const alone: number[] = [];
    for (const t of tasks) {
      if (t.cgroup === undefined) {
        if (t.pid !== undefined) alone.push(t.pid);
      } else if (signal === 'SIGKILL') {
        this.killAll(t.cgroup);
      } else {
        this.term(t.cgroup, signal);
      }
    }
    for (const message of killProcesses(alone, signal)) this.opts.error(message);
  }

  ended(task: TrackedTask): void {
    const dir = task.cgroup;
    if (dir === undefined) return;
    const why = removeTree(dir);
    if (why === undefined) return; // nothing left behind: the common case
    if (!why.busy) {
      this.opts.error(why.message);
      return;
    }
    const entry: { timer?: NodeJS.Timeout; stop?(): void } = {};
    this.lingering.set(task, entry);
    if (this.stopping) {
      this.killAll(dir);
    } else {
      this.term(dir);
      entry.timer = setTimeout(() => this.killAll(dir), this.opts.killGraceMs);
    }
    entry.stop = whenEmpty(dir, () => {
      if (entry.timer !== undefined) clearTimeout(entry.timer);
      this.lingering.delete(task);
      const left = removeTree(dir);
      if (left !== undefined) this.opts.error(left.message);
      if (this.stopping) this.opts.settled();
    });
  }

  stop(running: readonly TrackedTask[]): void {
    this.stopping = true;
    this.kill(running, 'SIGKILL');
    for (const [task, entry] of this.lingering) {
      if (entry.timer !== undefined) clearTimeout(entry.timer);
      this.killAll(task.cgroup!);
    }
  }

  idle(): boolean {
    return this.lingering.size === 0;
  }

  leave(): void {
    try {
      // Out of the home, to where the agent is, so the home and, last out, the base can go.
      writeFileSync(this.outerProcs(), String(process.pid));
      closeSync(this.homeProcs);
      if (this.layout.limits) rmdirSync(path.join(this.home, 'helper'));
      rmdirSync(this.home);
    } catch (e) {
      this.opts.error(`cannot remove the helper's cgroup '${this.home}': ${text(e)}`);
      return;
    }
    try {
      rmdirSync(this.base);
    } catch {
      // other helpers are still in it: the last one removes it, else the pool
    }
  }

  private killAll(dir: string): void {
    try {
      killCgroup(dir);
    } catch (e) {
      if (errnoOf(e) !== 'ENOENT') this.opts.error(`cannot kill the cgroup '${dir}': ${text(e)}`);
    }
  }

  private term(dir: string, signal: KillSignal = 'SIGTERM'): void {
    for (const message of killProcesses(cgroupProcs(dir), signal)) this.opts.error(message);
  }
}

function text(e: unknown): string {
  return errnoText(errnoOf(e), e);
}

/** Writes one limit into a task's cgroup: undefined, or why it could not. */
function writeLimit(dir: string, file: string, value: string): string | undefined {
  try {
    writeFileSync(path.join(dir, file), value);
    return undefined;
  } catch (e) {
    return text(e);
  }
}

function rmdirQuiet(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // never made, or gone
  }
}

/** Enables in `dir` each controller of memory, pids and cpu it has (cgroup.controllers). */
function enableControllers(dir: string): void {
  const have = readFileSync(path.join(dir, 'cgroup.controllers'), 'utf8').split(/\s+/);
  const want = ['memory', 'pids', 'cpu'].filter((c) => have.includes(c));
  if (want.length === 0) return;
  writeFileSync(path.join(dir, 'cgroup.subtree_control'), want.map((c) => `+${c}`).join(' '));
}
