/**
 * Signals every process of a task. A task runs as the leader of its own session and process
 * group (spawned `detached`), so `kill(-pid)` reaches it and its ordinary children. Some
 * launchers move children into process groups of their own: OpenMPI's mpirun gives each local
 * rank its own group, so a SIGKILL to mpirun's group would leave the ranks running. They stay
 * in the task's session, though, so after the group this also signals every process whose
 * session id is the task's pid, found in /proc (Linux). srun's ranks run under slurmstepd, in no
 * session of ours: signaling srun is what ends them (launch.ts: a SIGTERM makes srun SIGKILL the
 * step; after a SIGKILL, srun's shepherd child cancels the step). That child is in srun's group
 * and session, and killing it with srun leaves the ranks running, so srun tasks are signaled
 * with killProcesses (Launch.killScope 'process'). Node built-ins only: the spawner helper
 * imports this.
 */
import { readFileSync, readdirSync } from 'node:fs';

/** Signals the groups of `leaders` and every other process in their sessions. */
export function killSessions(leaders: readonly number[], signal: NodeJS.Signals): string[] {
  const errors: string[] = [];
  if (leaders.length === 0) return errors;
  for (const pid of leaders) signalPid(-pid, signal, errors);
  for (const pid of sessionMembers(new Set(leaders))) signalPid(pid, signal, errors);
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

/** Pids (other than the leaders) whose session id is one of `sids`. */
export function sessionMembers(sids: ReadonlySet<number>): number[] {
  const out: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return out; // no /proc: the group kill is all we can do
  }
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || sids.has(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces and ')'.
    const session = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]);
    if (sids.has(session)) out.push(pid);
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
