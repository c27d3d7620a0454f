import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { errnoOf, errnoText } from '../../../lib/errno-text';
import type { Logger } from '../../../lib/logger';
import type { SpawnRequest, SpawnSpec, TaskLimits } from './helper/protocol';
import { killProcesses } from './helper/kill-session';
import { procsIn } from './helper/task-cgroup';
import { V2Limits } from './pool-limits-v2';
import type { OomKills, TaskLimiter } from './task-limiter';
import {
  OOM_FILE,
  controllersOf,
  limitWrites,
  oomKillsOf,
  v1Cgroups,
  type Controller,
} from './task-limits';

export type { TaskLimiter } from './task-limiter';

// The SpawnerPool's part of task limits (docs/launch-methods.md, "Resource limits"): where the
// machine has the cgroup v1 controllers memory, pids and cpu writable, the pool makes a base in
// each (`<own cgroup>/pilotfish-<pid>-<random>`), and per task with limits a cgroup below it,
// writes the limits there and sends the directories in the spawn (SpawnSpec.cgroups): the helper
// starts the task inside them. At the task's exit it reads the OOM kills and removes them.
// Where no v1 hierarchy has them, the limits go into the task cgroups of the cgroup v2 tree
// (pool-limits-v2.ts).

/** Names the variable that puts the v1 hierarchies elsewhere (PoolLimitsOptions.v1Root). */
export const V1_ROOT_ENV = 'PILOTFISH_CGROUP_V1_ROOT';

/** How often, and how long, leftovers' cgroups are tried again at close. */
const RETRY_MS = 50;
const CLOSE_TIMEOUT_MS = 5_000;

export interface PoolLimitsOptions {
  /**
   * Where the v1 hierarchies are, `<root>/<controller>` (tests); default: the
   * PILOTFISH_CGROUP_V1_ROOT variable if set, else the mounts.
   */
  v1Root?: string;
}

/** One task's cgroups: controller, directory; `pids`: a cgroup of pids.max alone (reusable). */
interface Limited {
  dirs: [Controller, string][];
  memoryBytes: number | undefined;
  pids?: number;
}

const NO_V1 = 'no cgroup v1 hierarchy of memory, pids or cpu holds this process';

/** Empty pids-only cgroups kept for reuse, per pids.max (the default limit's hot path). */
const SPARE_MAX = 64;

export class PoolLimits implements TaskLimiter {
  /** Task cgroups of the tasks that run, by uid. */
  private readonly tasks = new Map<string, Limited>();
  /** Cgroups that still held processes (leftovers) when their task ended. */
  private pending: string[] = [];
  private retryTimer: NodeJS.Timeout | undefined;
  private serial = 0;
  private warned = false;
  /** Empty cgroups of pids.max alone, by their pids.max: a task asking only that takes one. */
  private readonly spare = new Map<number, string[]>();

  private constructor(
    /** Per controller, the pool's base cgroup. */
    private readonly bases: ReadonlyMap<Controller, string>,
    /** Whether the v1 memory controller has swap accounting (memory.memsw.*). */
    private readonly memsw: boolean,
    /** Why limits of some controllers (or all) cannot be set here; undefined: all can. */
    readonly why: string | undefined,
    private readonly log: Logger,
  ) {}

  /**
   * The limits this machine lets the agent set: in its cgroup v1 controllers, else in the task
   * cgroups under `base` (cgroup v2 task tracking; undefined: none, `noBase` says why).
   */
  static make(
    opts: PoolLimitsOptions,
    log: Logger,
    base?: string,
    noBase = 'the processes of tasks are tracked through /proc',
  ): TaskLimiter {
    const v1 = PoolLimits.v1(opts, log);
    if (v1.controllers.length > 0 || v1.why !== NO_V1) return v1;
    if (base !== undefined) return V2Limits.make(path.dirname(base), base, log);
    return new PoolLimits(
      new Map(),
      false,
      `${NO_V1}, and limits in the cgroup v2 tree need task cgroups (${noBase})`,
      log,
    );
  }

  /** Makes the bases of the cgroup v1 controllers this machine lets the agent write. */
  private static v1(opts: PoolLimitsOptions, log: Logger): PoolLimits {
    let own = new Map<Controller, string>();
    try {
      const mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
      const cgroup = readFileSync('/proc/self/cgroup', 'utf8');
      own = v1Cgroups(mountinfo, cgroup, opts.v1Root ?? (process.env[V1_ROOT_ENV] || undefined));
    } catch {
      // not Linux: no controller
    }
    const bases = new Map<Controller, string>();
    const missing: string[] = [];
    const name = `pilotfish-${process.pid}-${randomBytes(3).toString('hex')}`;
    for (const c of ['memory', 'pids', 'cpu'] as const) {
      const dir = own.get(c);
      if (dir === undefined) {
        missing.push(`${c}: no cgroup v1 hierarchy`);
        continue;
      }
      const base = path.join(dir, name);
      try {
        mkdirSync(base);
        bases.set(c, base);
      } catch (e) {
        missing.push(`${c}: cannot create '${base}': ${text(e)}`);
      }
    }
    const memory = bases.get('memory');
    const memsw =
      memory !== undefined && existsSync(path.join(memory, 'memory.memsw.limit_in_bytes'));
    const why = own.size === 0 ? NO_V1 : missing.length === 0 ? undefined : missing.join('; ');
    return new PoolLimits(bases, memsw, why, log);
  }

  /** The controllers whose limits are set. */
  get controllers(): Controller[] {
    return [...this.bases.keys()];
  }

  helperArgs(): string[] {
    return [];
  }

  /** The spawn request of `spec`: its limits (if any) become the cgroups it starts in. */
  request(spec: SpawnSpec): SpawnRequest {
    const { limits, ...rest } = spec;
    const cgroups = limits === undefined ? [] : this.prepare(spec.uid, limits);
    return cgroups.length === 0 ? { op: 'spawn', ...rest } : { op: 'spawn', ...rest, cgroups };
  }

  /**
   * Makes the task's cgroups and writes its limits; the directories to start it in (none when
   * nothing can be limited: it runs without, said once in the log).
   */
  prepare(uid: string, limits: TaskLimits): string[] {
    const asked = controllersOf(limits);
    if (asked.length === 0) return [];
    const reused = asked.length === 1 ? this.spare.get(limits.pids ?? -1)?.pop() : undefined;
    if (reused !== undefined) {
      this.tasks.set(uid, { dirs: [['pids', reused]], memoryBytes: undefined, pids: limits.pids! });
      return [reused];
    }
    const task: Limited = { dirs: [], memoryBytes: undefined };
    const n = String((this.serial += 1));
    try {
      for (const c of asked) {
        const base = this.bases.get(c);
        if (base === undefined) continue;
        const dir = path.join(base, n);
        mkdirSync(dir);
        task.dirs.push([c, dir]);
      }
      const where = new Map(task.dirs);
      for (const w of limitWrites('v1', limits, this.memsw)) {
        const dir = where.get(w.controller);
        if (dir !== undefined) writeFileSync(path.join(dir, w.file), w.value);
      }
    } catch (e) {
      this.warnOnce('cannot set the limits of a task: it runs without', { taskId: uid, ...err(e) });
      this.remove(task.dirs.map(([, d]) => d));
      return [];
    }
    if (dirOf(task, 'memory') !== undefined) task.memoryBytes = limits.memoryBytes;
    if (asked.some((c) => !this.bases.has(c))) {
      this.warnOnce('some limits of tasks cannot be set here', { taskId: uid, why: this.why });
    }
    if (asked.length === 1 && task.dirs.length === 1 && limits.pids !== undefined) {
      task.pids = limits.pids;
    }
    if (task.dirs.length > 0) this.tasks.set(uid, task);
    return task.dirs.map(([, d]) => d);
  }

  /** The task ended (or never started): its OOM kills, if it had a memory limit and any. */
  ended(uid: string, _reported?: number, clean = false): OomKills | undefined {
    const task = this.tasks.get(uid);
    if (task === undefined) return undefined;
    this.tasks.delete(uid);
    let kills = 0;
    const memory = dirOf(task, 'memory');
    if (memory !== undefined) {
      try {
        kills = oomKillsOf(readFileSync(path.join(memory, OOM_FILE.v1), 'utf8'));
      } catch (e) {
        this.log.warn('cannot read the OOM kills of a task', { taskId: uid, ...err(e) });
      }
    }
    if (task.pids !== undefined && this.keep(task.pids, task.dirs[0]![1], clean)) return undefined;
    this.remove(task.dirs.map(([, d]) => d));
    return kills > 0 ? { kills, limitBytes: task.memoryBytes! } : undefined;
  }

  /** Every helper has exited: kill what is left in the task cgroups, remove them and the bases. */
  async close(): Promise<void> {
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const running = [...this.tasks.values()].flatMap((t) => t.dirs.map(([, d]) => d));
    const all = [...this.pending, ...running, ...[...this.spare.values()].flat()];
    this.spare.clear();
    this.tasks.clear();
    this.pending = [];
    const deadline = Date.now() + CLOSE_TIMEOUT_MS;
    let left = all;
    for (;;) {
      left = left.filter((d) => !rmdirGone(d));
      if (left.length === 0 || Date.now() > deadline) break;
      for (const d of left) killProcesses(procsIn(d), 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
    if (left.length > 0) this.log.warn('cannot remove the cgroups of tasks', { left });
    for (const base of this.bases.values()) {
      if (!rmdirGone(base)) this.log.warn('cannot remove the task limits cgroup', { base });
    }
  }

  /**
   * Keeps an empty pids-only cgroup for the next task of the same pids.max: one read (none when
   * its helper saw the task's processes all gone, `clean`) instead of an rmdir now and a mkdir
   * and a write then (~35 us of the agent's CPU per task here).
   */
  private keep(pids: number, dir: string, clean: boolean): boolean {
    const spare = this.spare.get(pids) ?? [];
    if (spare.length >= SPARE_MAX) return false;
    try {
      const empty = clean || readFileSync(path.join(dir, 'pids.current'), 'utf8').trim() === '0';
      if (!empty) return false;
    } catch {
      return false;
    }
    spare.push(dir);
    this.spare.set(pids, spare);
    return true;
  }

  /** rmdir of each; those that still hold processes are tried again after the leftovers' end. */
  private remove(dirs: string[]): void {
    const busy = [...this.pending, ...dirs].filter((d) => !rmdirGone(d));
    this.pending = busy;
    if (busy.length > 0 && this.retryTimer === undefined) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        this.remove([]);
      }, 1_000);
      this.retryTimer.unref();
    }
  }

  private warnOnce(message: string, meta: Record<string, unknown>): void {
    if (this.warned) return;
    this.warned = true;
    this.log.warn(message, meta);
  }
}

function dirOf(task: Limited, c: Controller): string | undefined {
  return task.dirs.find(([k]) => k === c)?.[1];
}

/** rmdir; true once the cgroup is gone (false: processes remain, or it cannot go). */
function rmdirGone(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (e) {
    return errnoOf(e) === 'ENOENT';
  }
}

function text(e: unknown): string {
  return errnoText(errnoOf(e), e);
}

function err(e: unknown): { error: string } {
  return { error: text(e) };
}
