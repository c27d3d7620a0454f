/**
 * CPU time per process role during a stretch of a benchmark: the client (this process, from
 * process.cpuUsage) and its descendants (from /proc/PID/stat: user + system ticks, which count
 * a process's own threads, ZeroMQ's I/O threads and libuv's pool included), by what they run:
 * `agent` (dist/src/agent/main.js), `workers` (function workers, Node or Python) and `other`
 * (spawner helpers, anything else). Wall-clock rates on a shared 2-core box move with the load
 * of others; CPU time per task moves much less, so it is what tells a change apart.
 *
 * Linux only; elsewhere (no /proc) the descendants read as none and only `client` counts.
 */
import * as fs from 'node:fs';

export type CpuRole = 'client' | 'agent' | 'workers' | 'other';
export type CpuByRole = Record<CpuRole, number>;

/** Clock ticks per second of /proc/PID/stat (USER_HZ: 100 on every Linux this runs on). */
const TICKS_PER_S = 100;

/** A reading to subtract from a later one: microseconds of CPU per role, since each started. */
export function cpuNow(): CpuByRole {
  const { user, system } = process.cpuUsage();
  const out: CpuByRole = { client: user + system, agent: 0, workers: 0, other: 0 };
  for (const p of descendants(process.pid)) out[roleOf(p.cmd)] += p.us;
  return out;
}

/** Microseconds of CPU per role between two readings. */
export function cpuSince(before: CpuByRole): CpuByRole {
  const now = cpuNow();
  return {
    client: now.client - before.client,
    agent: now.agent - before.agent,
    workers: now.workers - before.workers,
    other: now.other - before.other,
  };
}

function roleOf(cmd: string): Exclude<CpuRole, 'client'> {
  if (cmd.includes('agent/main.js')) return 'agent';
  if (cmd.includes('functions/worker/main.js') || cmd.includes('python_worker')) return 'workers';
  return 'other';
}

interface Proc {
  pid: number;
  ppid: number;
  us: number;
  cmd: string;
}

/** Every live descendant of `root` with its CPU so far (a process gone meanwhile is not counted). */
function descendants(root: number): Proc[] {
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const procs: Proc[] = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const p = readProc(Number(e));
    if (p !== undefined) procs.push(p);
  }
  const children = new Map<number, Proc[]>();
  for (const p of procs) {
    const list = children.get(p.ppid) ?? [];
    list.push(p);
    children.set(p.ppid, list);
  }
  const out: Proc[] = [];
  const walk = (pid: number): void => {
    for (const c of children.get(pid) ?? []) {
      out.push(c);
      walk(c.pid);
    }
  };
  walk(root);
  return out;
}

function readProc(pid: number): Proc | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name is in parentheses and may hold spaces: fields count from its end
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(rest[11]) + Number(rest[12]); // utime, stime (fields 14 and 15)
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    return { pid, ppid: Number(rest[1]), us: (ticks * 1e6) / TICKS_PER_S, cmd };
  } catch {
    return undefined; // gone meanwhile
  }
}
