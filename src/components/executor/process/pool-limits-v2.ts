import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { errnoOf, errnoText } from '../../../lib/errno-text';
import type { Logger } from '../../../lib/logger';
import type { SpawnRequest, SpawnSpec } from './helper/protocol';
import type { OomKills, TaskLimiter } from './task-limiter';
import { procsIn } from './helper/task-cgroup';
import { CONTROLLERS, controllersOf, limitWrites, type Controller } from './task-limits';

// Task limits in a cgroup v2 tree (docs/launch-methods.md, "Resource limits"): the limits go
// into each task's own tracking cgroup, `<base>/<helper pid>/<serial>` (helper/tracking.ts).
// cgroup v2 gives a controller to a cgroup's children only where the cgroup holds no process
// (the root excepted), so:
//   - the pool enables memory, pids and cpu in the agent's cgroup (`own`) and in the base; where
//     `own` holds the agent (not the root of the tree), the agent first moves itself into a
//     cgroup of its own below it, `<own>/pilotfish-agent-<pid>-<random>`, and back at close;
//     where `own` holds other processes too (a shell, the client of a local pilot), limits
//     cannot be set: said once, with how to give the agent a delegated cgroup;
//   - each helper lives in `<home>/helper` and enables the controllers in its home
//     (`--cgroup-limits`), and is told where the agent runs (`--cgroup-outer`) when it moved;
//   - per task, the pool sends the files and values (`cgroupLimits`); the helper writes them
//     into the task's cgroup before the task starts there, and reads its OOM kills
//     (memory.events) into the exit before it removes the cgroup.

/** What the pool did to the tree, undone at close. */
interface Setup {
  /** The controllers enabled in `own` and the base. */
  controllers: Controller[];
  /** Of those, the ones `own` did not have enabled before. */
  enabledInOwn: Controller[];
  /** The agent's own cgroup below `own`, where it moved to (undefined: it stayed). */
  leaf?: string | undefined;
}

export class V2Limits implements TaskLimiter {
  /** Tasks with a memory limit, and that limit (bytes), by uid. */
  private readonly memory = new Map<string, number>();
  private warned = false;

  private constructor(
    private readonly own: string,
    private readonly setup: Setup,
    readonly why: string | undefined,
    private readonly log: Logger,
  ) {}

  /**
   * Sets the tree up for the limits of tasks in the task cgroups under `base` (made by
   * PoolTracking in `own`, the agent's cgroup), or says why it cannot.
   */
  static make(own: string, base: string, log: Logger): V2Limits {
    const none = (why: string): V2Limits =>
      new V2Limits(own, { controllers: [], enabledInOwn: [] }, why, log);
    let offered: Controller[];
    let enabled: string[];
    try {
      const words = wordsOf(path.join(own, 'cgroup.controllers'));
      offered = CONTROLLERS.filter((c) => words.includes(c));
      enabled = wordsOf(path.join(own, 'cgroup.subtree_control'));
    } catch (e) {
      return none(`cannot read the controllers of '${own}': ${text(e)}`);
    }
    if (offered.length === 0) {
      return none(
        `the cgroup v2 tree gives no memory, pids or cpu controller to '${own}' (its cgroup.controllers lists none: they are not delegated to it)`,
      );
    }
    const enabledInOwn = offered.filter((c) => !enabled.includes(c));
    const setup: Setup = { controllers: offered, enabledInOwn };
    const first = enable(own, enabledInOwn);
    if (first !== undefined && first.code === 'EBUSY') {
      setup.leaf = path.join(
        own,
        `pilotfish-agent-${process.pid}-${randomBytes(3).toString('hex')}`,
      );
      const moved = moveInto(setup.leaf, own);
      const again = moved ?? enable(own, enabledInOwn);
      if (again !== undefined) {
        const procs = procsIn(own);
        back(own, setup.leaf);
        const others =
          moved === undefined
            ? ` (it holds processes other than the agent: ${procs.join(', ')})`
            : '';
        return none(
          `cannot enable ${enabledInOwn.join(', ')} below '${own}'${others}: ${again.message}; limits need the agent in a cgroup of its own, delegated (e.g. systemd-run --scope -p Delegate=yes, or a batch job's step)`,
        );
      }
    } else if (first !== undefined) {
      return none(`cannot enable ${enabledInOwn.join(', ')} below '${own}': ${first.message}`);
    }
    const inBase = enable(base, offered);
    const limits = new V2Limits(own, setup, undefined, log);
    if (inBase !== undefined) {
      void limits.close();
      return none(`cannot enable ${offered.join(', ')} in '${base}': ${inBase.message}`);
    }
    const missing = CONTROLLERS.filter((c) => !offered.includes(c));
    if (missing.length === 0) return limits;
    return new V2Limits(
      own,
      setup,
      `no ${missing.join(', ')} controller in the cgroup v2 tree of '${own}'`,
      log,
    );
  }

  get controllers(): Controller[] {
    return [...this.setup.controllers];
  }

  helperArgs(): string[] {
    if (this.setup.controllers.length === 0) return [];
    return [
      '--cgroup-limits',
      ...(this.setup.leaf === undefined ? [] : ['--cgroup-outer', this.setup.leaf]),
    ];
  }

  request(spec: SpawnSpec): SpawnRequest {
    const { limits, ...rest } = spec;
    if (limits === undefined) return { op: 'spawn', ...rest };
    const asked = controllersOf(limits);
    const have = this.setup.controllers;
    if (asked.some((c) => !have.includes(c))) {
      this.warnOnce('some limits of tasks cannot be set here', { taskId: spec.uid, why: this.why });
    }
    const writes = limitWrites('v2', limits).filter((w) => have.includes(w.controller));
    if (writes.length === 0) return { op: 'spawn', ...rest };
    if (writes.some((w) => w.file === 'memory.max')) this.memory.set(spec.uid, limits.memoryBytes!);
    const cgroupLimits = Object.fromEntries(writes.map((w) => [w.file, w.value]));
    return { op: 'spawn', ...rest, cgroupLimits };
  }

  ended(uid: string, reported?: number): OomKills | undefined {
    const limitBytes = this.memory.get(uid);
    this.memory.delete(uid);
    if (limitBytes === undefined || reported === undefined || reported <= 0) return undefined;
    return { kills: reported, limitBytes };
  }

  /**
   * Every helper has exited and the base is gone: gives back what the pool enabled in the
   * agent's cgroup, and moves the agent back where it was.
   */
  async close(): Promise<void> {
    const { leaf, enabledInOwn } = this.setup;
    if (leaf === undefined) return;
    this.setup.leaf = undefined;
    const failed = disable(this.own, enabledInOwn) ?? back(this.own, leaf);
    if (failed !== undefined) {
      this.log.warn('cannot give the agent its cgroup back', { cgroup: this.own, error: failed });
    }
    await Promise.resolve();
  }

  private warnOnce(message: string, meta: Record<string, unknown>): void {
    if (this.warned) return;
    this.warned = true;
    this.log.warn(message, meta);
  }
}

function wordsOf(file: string): string[] {
  return readFileSync(file, 'utf8').split(/\s+/).filter(Boolean);
}

/** Enables the controllers for the cgroups below `dir`: undefined, or the failure. */
function enable(
  dir: string,
  controllers: readonly Controller[],
): { code: string; message: string } | undefined {
  return control(
    dir,
    controllers.map((c) => `+${c}`),
  );
}

function disable(dir: string, controllers: readonly Controller[]): string | undefined {
  return control(
    dir,
    controllers.map((c) => `-${c}`),
  )?.message;
}

function control(dir: string, words: string[]): { code: string; message: string } | undefined {
  if (words.length === 0) return undefined;
  const file = path.join(dir, 'cgroup.subtree_control');
  try {
    writeFileSync(file, words.join(' '));
    return undefined;
  } catch (e) {
    return {
      code: errnoOf(e),
      message: `cannot write '${words.join(' ')}' to '${file}': ${text(e)}`,
    };
  }
}

/** Makes `leaf` below `own` and moves this process into it: undefined, or the failure. */
function moveInto(leaf: string, own: string): { code: string; message: string } | undefined {
  try {
    mkdirSync(leaf);
    writeFileSync(path.join(leaf, 'cgroup.procs'), String(process.pid));
    return undefined;
  } catch (e) {
    return { code: errnoOf(e), message: `cannot move the agent below '${own}': ${text(e)}` };
  }
}

/** Moves this process back into `own` and removes `leaf`: undefined, or the failure. */
function back(own: string, leaf: string): string | undefined {
  try {
    writeFileSync(path.join(own, 'cgroup.procs'), String(process.pid));
  } catch (e) {
    if (errnoOf(e) !== 'ENOENT') return `cannot move the agent back into '${own}': ${text(e)}`;
  }
  try {
    rmdirSync(leaf);
    return undefined;
  } catch (e) {
    return errnoOf(e) === 'ENOENT' ? undefined : `cannot remove '${leaf}': ${text(e)}`;
  }
}

function text(e: unknown): string {
  return errnoText(errnoOf(e), e);
}
