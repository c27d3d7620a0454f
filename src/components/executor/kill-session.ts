/**
 * Signals every process of a task. A task runs as the leader of its own session and process
 * group (spawned `detached`), so `kill(-pid)` reaches it and its ordinary children. The C spawner
 * helper (native/spawner/pf-spawner.c) does the same in C: keep the two in step. Some
 * launchers move children into process groups of their own: OpenMPI's mpirun gives each local
 * rank its own group, so a SIGKILL to mpirun's group would leave the ranks running. They stay
 * in the task's session, though, so after the group this also signals every process whose
 * session id is the task's pid, found in /proc (Linux). srun's ranks run under slurmstepd, in no
 * session of ours: signaling srun is what ends them (docs/launch-methods.md: a SIGTERM makes srun
 * SIGKILL the step; after a SIGKILL, srun's shepherd child cancels the step). That child is in
 * srun's group and session, and killing it with srun leaves the ranks running, so srun tasks are
 * signaled with killProcesses (Launch.killScope 'process'). Node built-ins only: the spawner
 * helper imports this.
 */
import { readFileSync, readdirSync } from 'node:fs';

/**
 * Signals the groups of `leaders`, every other process in their sessions, and the descendants of
 * all those (a child that called setsid left the session but is still a descendant). The members
 * are found before any signal: once a parent is killed, its children move to init, out of reach.
 */
export function killSessions(leaders: readonly number[], signal: NodeJS.Signals): string[] {
  const errors: string[] = [];
  if (leaders.length === 0) return errors;
  const members = sessionMembers(new Set(leaders));
  for (const pid of leaders) signalPid(-pid, signal, errors);
  for (const pid of members) signalPid(pid, signal, errors);
  return errors;
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

/**
 * Pids (other than the leaders) whose session id is one of `sids`, or with an ancestor that is
 * such a process or a leader.
 */
export function sessionMembers(sids: ReadonlySet<number>): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return []; // no /proc: the group kill is all we can do
  }
  const procs = new Map<number, { ppid: number; sid: number }>();
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
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    procs.set(pid, { ppid: Number(fields[1]), sid: Number(fields[3]) });
  }
  const inTree = new Map<number, boolean>();
  const belongs = (pid: number): boolean => {
    const path: number[] = [];
    let found = false;
    for (let p = pid; p > 1 && path.length < 256;) {
      const known = inTree.get(p);
      if (known !== undefined) {
        found = known;
        break;
      }
      path.push(p);
      const proc = procs.get(p);
      if (proc === undefined) break;
      if (sids.has(p) || sids.has(proc.sid)) {
        found = true;
        break;
      }
      p = proc.ppid;
    }
    for (const p of path) inTree.set(p, found);
    return found;
  };
  const out: number[] = [];
  for (const pid of procs.keys()) {
    if (!sids.has(pid) && belongs(pid)) out.push(pid);
  }
  return out;
}

function signalPid(pid: number, signal: NodeJS.Signals, errors: string[]): void {
  try {
    process.kill(pid, signal);
  } catch (e) {
    const code = (e as { code?: unknown } | null)?.code;
    if (code !== 'ESRCH') errors.push(`kill ${signal} ${pid}: ${String(code)}`);
  }
}
