/**
 * The line protocol of the spawner helpers (native/spawner/pf-spawner.c and spawner-main.ts),
 * which SpawnerPool speaks: newline-delimited JSON, one object per line, both ways (UTF-8).
 *   to a helper:   {"op":"spawn",uid,executable,args,env,cwd,stdoutPath,stderrPath,files?,killScope?,
 *                   cpus?}
 *                  | {"op":"kill",uid,signal:"SIGTERM"|"SIGKILL"}
 *   from a helper: {"ev":"ready",pid,tracking,markPrefix,why?} first, then {"ev":"started",uid,pid,t}
 *                  | {"ev":"exited",uid,exitCode,signal,t} | {"ev":"failed",uid,code,message}
 *                  | {"ev":"error",message}
 * The requests of one synchronous run go out in one write; a helper sends the events of one of
 * its loop turns in one write. `files` are written before the task starts; a spawn with
 * `killScope: 'process'` (srun) is killed alone, others with every process they started, tracked
 * as `tracking` says: 'cgroup' (a cgroup per task) or 'proc' (groups, sessions, descendants and
 * PF_TASK_MARK, whose values start with `markPrefix`, found in /proc); `why` says why task
 * cgroups were asked for (`--cgroup BASE`) and are not used. When a task's main process exits,
 * what it left behind gets SIGTERM, then SIGKILL after the grace (`--kill-grace-ms N`).
 * A bad line gets an error event and the helper goes on. Details (kill scope, stdin EOF, NUL
 * bytes) at the top of pf-spawner.c and spawner-main.ts.
 *
 * Types only: spawner-main.ts imports node built-ins alone at run time, to start fast.
 */
import type { ExitedEvent, FailedEvent, KillSignal, SpawnSpec, StartedEvent } from './effects';
import type { TrackingKind } from './helper-tracking';

/** Start a process (a task, or one rank of it). */
export type SpawnRequest = { op: 'spawn' } & SpawnSpec;

/** Signal a running task; a uid the helper does not run is ignored. */
export interface KillRequest {
  op: 'kill';
  uid: string;
  signal: KillSignal;
}

/** A line to a helper. */
export type HelperRequest = SpawnRequest | KillRequest;

/** A line from a helper. */
export type HelperEvent =
  | { ev: 'ready'; pid: number; tracking: TrackingKind; markPrefix: string; why?: string }
  | ({ ev: 'started' } & StartedEvent)
  | ({ ev: 'exited' } & ExitedEvent)
  | ({ ev: 'failed' } & FailedEvent)
  | { ev: 'error'; message: string };
