import * as path from 'node:path';
import type { TaskLimits } from './helper/protocol';

// The limits of a task's cgroup, as data: which file of which controller gets which value, on
// each cgroup hierarchy, and how an OOM kill is read back. Pure: pool-limits.ts does the I/O.

/** The two cgroup hierarchies machines have: v1 (a mount per controller) and v2 (one tree). */
export type Hierarchy = 'v1' | 'v2';
/** The controllers a task's limits use. */
export type Controller = 'memory' | 'pids' | 'cpu';
export const CONTROLLERS: readonly Controller[] = ['memory', 'pids', 'cpu'];

/** One write into a task's cgroup: `value` into `<its cgroup in controller>/<file>`. */
export interface LimitWrite {
  controller: Controller;
  file: string;
  value: string;
}

/** The CFS period of a CPU quota (the kernel's default), in µs. */
export const CPU_PERIOD_US = 100_000;

/**
 * The writes that set `limits` on a new task cgroup, in order. v1 memory: the swap-inclusive
 * limit (memsw, where the kernel has swap accounting: `memsw`) equal to the memory one, so the
 * task cannot swap past it; it goes second, as memsw may not be below memory's limit. v2: no
 * swap at all (memory.swap.max 0). CPU: `cpus` cores' worth of time per 100 ms period.
 */
export function limitWrites(h: Hierarchy, limits: TaskLimits, memsw = true): LimitWrite[] {
  const writes: LimitWrite[] = [];
  const w = (controller: Controller, file: string, value: number | string): void => {
    writes.push({ controller, file, value: String(value) });
  };
  const { memoryBytes, pids, cpus } = limits;
  if (memoryBytes !== undefined) {
    if (h === 'v1') {
      w('memory', 'memory.limit_in_bytes', memoryBytes);
      if (memsw) w('memory', 'memory.memsw.limit_in_bytes', memoryBytes);
    } else {
      w('memory', 'memory.max', memoryBytes);
      w('memory', 'memory.swap.max', 0);
    }
  }
  if (pids !== undefined) w('pids', 'pids.max', pids);
  if (cpus !== undefined) {
    const quota = Math.max(1_000, Math.round(cpus * CPU_PERIOD_US)); // the kernel's minimum: 1 ms
    if (h === 'v1') {
      w('cpu', 'cpu.cfs_period_us', CPU_PERIOD_US);
      w('cpu', 'cpu.cfs_quota_us', quota);
    } else {
      w('cpu', 'cpu.max', `${quota} ${CPU_PERIOD_US}`);
    }
  }
  return writes;
}

/** The controllers `limits` needs. */
export function controllersOf(limits: TaskLimits): Controller[] {
  const asked: Record<Controller, boolean> = {
    memory: limits.memoryBytes !== undefined,
    pids: limits.pids !== undefined,
    cpu: limits.cpus !== undefined,
  };
  return CONTROLLERS.filter((c) => asked[c]);
}

/** The file of a memory cgroup that counts its OOM kills (an `oom_kill N` line). */
export const OOM_FILE: Record<Hierarchy, string> = {
  v1: 'memory.oom_control',
  v2: 'memory.events',
};

export { oomKillsOf } from './helper/task-cgroup';

/**
 * This process's own cgroup in each cgroup v1 hierarchy of a limit controller, from its
 * /proc/<pid>/mountinfo and /proc/<pid>/cgroup: the mount of the hierarchy (fstype `cgroup`,
 * the controller among its super options; `cpu,cpuacct` mounts count for cpu) joined with the
 * process's path in it. `root` (tests): hierarchies at `<root>/<controller>` instead of the
 * mounts. A controller without a hierarchy, or whose path lies outside the mounted tree, is
 * left out.
 */
export function v1Cgroups(
  mountinfo: string,
  cgroup: string,
  root?: string,
): Map<Controller, string> {
  const found = new Map<Controller, string>();
  const own = new Map<string, string>();
  for (const line of cgroup.split('\n')) {
    const m = /^\d+:([^:]+):(.*)$/.exec(line);
    if (m === null) continue;
    for (const c of m[1]!.split(',')) own.set(c, m[2]!);
  }
  const mounts = mountinfo
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f.indexOf('-') > 0 && f[f.indexOf('-') + 1] === 'cgroup');
  for (const c of CONTROLLERS) {
    const rel = own.get(c);
    if (rel === undefined) continue;
    if (root !== undefined) {
      found.set(c, path.posix.join(root, c, rel));
      continue;
    }
    const mount = mounts.find((f) => (f[f.indexOf('-') + 3] ?? '').split(',').includes(c));
    if (mount === undefined) continue;
    const inside = path.posix.relative(unescape(mount[3]!), rel);
    if (inside.startsWith('..')) continue;
    found.set(c, path.posix.join(unescape(mount[4]!), inside));
  }
  return found;
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}
