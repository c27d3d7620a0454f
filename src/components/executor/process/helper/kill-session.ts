/**
 * Finds and signals every process of a task where the machine gives no cgroup for it ("proc"
 * tracking; task-cgroup.ts is the other way). The C spawner helper (native/spawner/pf-spawner.c)
 * does the same in C: keep the two in step.
 *
 * A task runs as the leader of its own session and process group, so `kill(-pid)` reaches it and
 * its ordinary children. Some launchers move children into process groups of their own
 * (OpenMPI's mpirun gives each local rank one), but they stay in the task's session; a child that
 * called setsid left the session but is still a descendant while its parent lives. A process
 * whose parent died (a double fork, or any child of an ended main process) is reparented to init
 * or to a subreaper above the helper, and no chain of parents leads back to the task any more:
 * such an orphan is known by the task's mark, PF_TASK_MARK in its environment, which the helper
 * gives every task and which children inherit (as HTCondor's procd tracks jobs by an environment
 * variable). Orphans are the processes whose parent is the scanning process or one of its
 * ancestors (init included), so only their environments are read.
 * Not found: a process that both left the session and started with an environment without the
 * mark (`env -i setsid ...`); task cgroups find those too.
 *
 * srun's ranks run under slurmstepd, in no session of ours: signaling srun is what ends them
 * (docs/launch-methods.md: a SIGTERM makes srun SIGKILL the step; after a SIGKILL, srun's
 * shepherd child cancels the step). That child is in srun's group and session, and killing it
 * with srun leaves the ranks running, so srun tasks are signaled with killProcesses
 * (Launch.killScope 'process'). Node built-ins only: the spawner helper imports this.
 */
import { readFileSync, readdirSync } from 'node:fs';

/** The variable that marks every process of a task (set by the spawner helpers). */
export const MARK_VAR = 'PF_TASK_MARK';

/** Processes of one task to signal. */
export interface SweepTarget {
  /** The task's main pid: its session id (the main may be gone; its session lives on). */
  sid?: number;
  /** Signal the group `-sid` too (the main runs); members in that group are not signaled twice. */
  group: boolean;
  /** PF_TASK_MARK of the task's processes; with `markPrefix`, any mark that starts with it. */
  mark?: string;
  markPrefix?: boolean;
  signal: NodeJS.Signals;
}

export interface SweepResult {
  /** Processes signaled per target (its group counts as one when signaled). */
  found: number[];
  errors: string[];
}

interface Proc {
  ppid: number;
  pgrp: number;
  sid: number;
}

/**
 * Signals every process of each target, found in one scan of /proc made before any signal: once
 * a parent is killed, its children move away. A process of two targets gets the first one's.
 */
export function sweep(targets: readonly SweepTarget[]): SweepResult {
  const found = targets.map(() => 0);
  const errors: string[] = [];
  if (targets.length === 0) return { found, errors };
  const procs = scanProcs();
  const bySid = new Map<number, number>();
  const byMark = new Map<string, number>();
  const prefixes: [string, number][] = [];
  targets.forEach((t, i) => {
    if (t.sid !== undefined && !bySid.has(t.sid)) bySid.set(t.sid, i);
    if (t.mark === undefined) return;
    if (t.markPrefix === true) prefixes.push([t.mark, i]);
    else if (!byMark.has(t.mark)) byMark.set(t.mark, i);
  });
  const orphanParents = selfAndAncestors(procs);
  const markOf = (pid: number): number | undefined => {
    const mark = readMark(pid);
    if (mark === undefined) return undefined;
    return byMark.get(mark) ?? prefixes.find(([p]) => mark.startsWith(p))?.[1];
  };
  const owner = new Map<number, number | undefined>();
  const ownerOf = (pid: number): number | undefined => {
    const path: number[] = [];
    let found: number | undefined;
    for (let p = pid; p > 0 && path.length < 256;) {
      if (owner.has(p)) {
        found = owner.get(p);
        break;
      }
      const proc = procs.get(p);
      if (proc === undefined || orphanParents.has(p)) break;
      path.push(p);
      found = bySid.get(p) ?? bySid.get(proc.sid);
      if (found !== undefined) break;
      if (orphanParents.has(proc.ppid)) {
        found = markOf(p); // an orphan (or a main): its mark says whose
        break;
      }
      p = proc.ppid;
    }
    for (const p of path) owner.set(p, found);
    return found;
  };
  const members: [number, number][] = [];
  for (const [pid, proc] of procs) {
    const i = ownerOf(pid);
    if (i === undefined) continue;
    const t = targets[i]!;
    if (t.group && t.sid !== undefined && proc.pgrp === t.sid) continue; // reached by the group
    members.push([pid, i]);
  }
  targets.forEach((t, i) => {
    if (t.group && t.sid !== undefined && signalPid(-t.sid, t.signal, errors)) found[i]!++;
  });
  for (const [pid, i] of members) {
    if (signalPid(pid, targets[i]!.signal, errors)) found[i]!++;
  }
  return { found, errors };
}

/**
 * Signals `pids` themselves, not their groups or sessions: for srun, whose child (the "shepherd")
 * ends the job step once srun is gone, and must therefore outlive it.
 */
export function killProcesses(pids: readonly number[], signal: NodeJS.Signals): string[] {
  const errors: string[] = [];
  for (const pid of pids) signalPid(pid, signal, errors);
  return errors;
}

/** Every process: parent, group, session. Empty without /proc (then the group kill is all). */
function scanProcs(): Map<number, Proc> {
  const procs = new Map<number, Proc>();
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return procs;
  }
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces and ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    procs.set(pid, { ppid: Number(f[1]), pgrp: Number(f[2]), sid: Number(f[3]) });
  }
  return procs;
}

/** This process and its ancestors: where orphans of the tasks it started are reparented. */
function selfAndAncestors(procs: ReadonlyMap<number, Proc>): Set<number> {
  const out = new Set<number>([1]);
  for (let p = process.pid; p > 0 && !out.has(p); p = procs.get(p)?.ppid ?? 0) out.add(p);
  return out;
}

const MARK_KEY = Buffer.from(`${MARK_VAR}=`);

/** PF_TASK_MARK in the environment `pid` started with; undefined if none or unreadable. */
function readMark(pid: number): string | undefined {
  let env: Buffer;
  try {
    env = readFileSync(`/proc/${pid}/environ`);
  } catch {
    return undefined; // gone, or not ours to read
  }
  for (let at = 0; at < env.length;) {
    let end = env.indexOf(0, at);
    if (end < 0) end = env.length;
    if (end - at > MARK_KEY.length && env.subarray(at, at + MARK_KEY.length).equals(MARK_KEY)) {
      return env.toString('utf8', at + MARK_KEY.length, end);
    }
    at = end + 1;
  }
  return undefined;
}

/** Sends a signal; true if it was delivered. A process already gone is no error. */
function signalPid(pid: number, signal: NodeJS.Signals, errors: string[]): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch (e) {
    const code = (e as { code?: unknown } | null)?.code;
    if (code !== 'ESRCH') errors.push(`kill ${signal} ${pid}: ${String(code)}`);
    return false;
  }
}
