/**
 * The line protocol of the spawner helpers (native/spawner/pf-spawner.c and spawner-main.ts),
 * which SpawnerPool speaks: newline-delimited JSON, one object per line, both ways (UTF-8).
 *   to a helper:   {"op":"spawn",uid,executable,args,env,cwd,stdoutPath,stderrPath,files?,killScope?,
 *                   cpus?}
 *                  | {"op":"kill",uid,signal:"SIGTERM"|"SIGKILL"}
 *   from a helper: {"ev":"ready",pid} first, then {"ev":"started",uid,pid}
 *                  | {"ev":"exited",uid,exitCode,signal} | {"ev":"failed",uid,code,message}
 *                  | {"ev":"error",message}
 * The requests of one synchronous run go out in one write; a helper sends the events of one of
 * its loop turns in one write. `files` are written before the task starts; a spawn with
 * `killScope: 'process'` (srun) is killed alone, others with their process group and session.
 * A bad line gets an error event and the helper goes on. Details (kill scope, stdin EOF, NUL
 * bytes) at the top of pf-spawner.c and spawner-main.ts.
 *
 * Types only: spawner-main.ts imports node built-ins alone at run time, to start fast.
 */
import type { ExitedEvent, FailedEvent, KillSignal, SpawnSpec, StartedEvent } from './effects';

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
  | { ev: 'ready'; pid: number }
  | ({ ev: 'started' } & StartedEvent)
  | ({ ev: 'exited' } & ExitedEvent)
  | ({ ev: 'failed' } & FailedEvent)
  | { ev: 'error'; message: string };
