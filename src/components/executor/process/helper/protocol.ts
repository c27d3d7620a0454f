/**
 * The line protocol of the spawner helpers (native/spawner/pf-spawner.c and main.ts),
 * which SpawnerPool speaks: newline-delimited JSON, one object per line, both ways (UTF-8).
 *   to a helper:   {"op":"spawn",uid,executable,args,env,cwd,stdoutPath,stderrPath,files?,killScope?,
 *                   cpus?,after?,cgroups?,cgroupLimits?,mkdir?}
 *                  | {"op":"spawn",uid,executable,args,env,cwd,stream:{attempt,capBytes?},files?,killScope?,
 *                   cpus?,after?,cgroups?,cgroupLimits?,mkdir?}
 *                  | {"op":"kill",uid,signal:"SIGTERM"|"SIGKILL"} | {"op":"end"} | {"op":"status"}
 *   from a helper: {"ev":"ready",pid,tracking,markPrefix,why?,reattached?} first, then
 *                   {"ev":"started",uid,pid,t}
 *                  | {"ev":"exited",uid,exitCode,signal,t,stdoutTail?,stderrTail?,stdoutBytes?,
 *                   stderrBytes?,dropped?,oomKills?} | {"ev":"failed",uid,code,message} | {"ev":"error",message}
 *                  | {"ev":"lost",uid,attempt,errno,file} (file: the part it wrote)
 *                  | {"ev":"status",running:[{uid,pid}],queued:[uid],ended:[exited|failed event]}
 * The requests of one synchronous run go out in one write; a helper sends the events of one of
 * its loop turns in one write. `mkdir` (the task's own directory) is made first, 0700, unless it
 * exists (its parent must; one it cannot make fails the spawn, the message beginning "cannot make
 * the task directory"); then `files` are written before the task starts; a spawn with
 * `killScope: 'process'` (srun) is killed alone, others with every process they started, tracked
 * as `tracking` says: 'cgroup' (a cgroup per task) or 'proc' (groups, sessions, descendants and
 * PF_TASK_MARK, whose values start with `markPrefix`, found in /proc); `why` says why task
 * cgroups were asked for (`--cgroup BASE`) and are not used. When a task's main process exits,
 * what it left behind gets SIGTERM, then SIGKILL after the grace (`--kill-grace-ms N`).
 * Output: a spawn gives either both paths (files, made 0600) or `stream` (an attempt, a whole
 * number in [0, 2^32), and no paths): then its stdout and stderr go through pipes into the
 * helper's stream file (`--stream PATH`; without it the spawn fails, EINVAL), framed with its uid
 * and attempt (src/lib/output-frames.ts; the frames of a turn in one write, before its events).
 * Its exit event follows the frames of all it wrote before it exited and carries ExitTails; what
 * it left behind is framed on until both pipes reach EOF, then one end frame (none for a spawn
 * that failed). A write of the stream file that fails loses its frames (said once in an error
 * event): each task attempt they were of gets a lost event, before the turn's other events (so
 * before its exit, when it exited in that turn). A bad line gets an error event and the helper
 * goes on. Details (kill scope, stdin EOF, NUL bytes, streams) at the top of pf-spawner.c and
 * main.ts.
 * Queued starts: a spawn with `after` naming a task whose main process this helper has not yet
 * reaped, or a spawn queued here, waits behind it (holding no pipe, cgroup or file) and starts
 * right after that one is reaped, fails to start or is dropped, in the same loop turn, before
 * that turn's events are written; its started event has the time it really started. Any other
 * `after` (unknown, or already reaped) starts at once. A kill of a queued uid drops it:
 * {"ev":"failed",uid,"code":"ECANCELED","message":"canceled before it started"}, and what waited
 * behind it waits behind what it waited for; at the helper's end each queued spawn fails the same
 * way ("...: the spawner helper is stopping"). A spawn of a uid that runs or is queued fails,
 * EEXIST. Held events (`--hold-ms N`, default 0): while a spawn is queued, started, exited and
 * failed events wait up to N ms from the first one held, then go in one write (and at once when
 * nothing is queued any more); ready and error events are never held (an error takes the held
 * ones with it). Stream frames are written each turn as without it.
 * End and status: `end` stops the helper as the end of its stdin does without keep mode (what
 * follows it is ignored). `status` is answered at once (never held) with the tasks whose main
 * process runs, the queued spawns and `ended`: the last 1,024 exited and failed events the helper
 * produced, oldest first, each exactly as it was sent (or held), in both modes.
 * Keep mode (`--keep PATH --keep-ms N`, opt-in; SpawnerPoolOptions.keep): when the master goes
 * away (stdin EOF, a failed write of stdout: EPIPE) the helper does not kill its tasks. They run
 * on, exits still come from SIGCHLD and output still goes to files and the stream file; every
 * event it would have written is held, and it listens on the Unix stream socket PATH (made 0600,
 * a stale one removed first; the directory is the caller's, 0700). The first master that
 * connects gets {"ev":"ready",...,"reattached":true}, then every held event in order, and the
 * protocol runs over that socket from then on; a second loss repeats this. The socket listens only
 * while no master is attached (it is gone once one connects), so a second master is refused. No
 * master within N ms of a loss: the helper ends as at stdin EOF without keep mode (kills every
 * task, cleans its cgroups, exits 0). A master in keep mode stops its helpers with `end`.
 *
 * Types only, and the lowest file of the process runner: the helper (main.ts) imports node
 * built-ins and its own folder alone at run time, to start fast; the pool (../spawner-pool.ts)
 * and the Executor's effects (../../effects.ts) take the spawn and signal types from here.
 */

/** Signals a task may be sent to tell it something (PilotDescription.signalBeforeEnd). */
export type NoticeSignal =
  'SIGTERM' | 'SIGINT' | 'SIGHUP' | 'SIGQUIT' | 'SIGUSR1' | 'SIGUSR2' | 'SIGALRM';
export type KillSignal = NoticeSignal | 'SIGKILL';

/**
 * How a helper keeps hold of every process of its tasks: a cgroup per task, or groups, sessions,
 * descendants and marked orphans found in /proc (tracking.ts).
 */
export type TrackingKind = 'cgroup' | 'proc';

/**
 * One process to start: its output to two files, or ('stream') through pipes into the helper's
 * stream file.
 */
export type SpawnSpec = FileSpawnSpec | StreamSpawnSpec;

/** output 'files': stdout and stderr go to these files (made 0600). */
export interface FileSpawnSpec extends SpawnBase {
  stdoutPath: string;
  stderrPath: string;
  stream?: undefined;
}

/**
 * output 'stream': stdout and stderr through pipes into the helper's stream file, framed with
 * the uid and this attempt (src/lib/output-frames.ts); the exit event carries the tails
 * (ExitedEvent.output). The pool needs a `streamDir`, else the spawn fails (EINVAL).
 */
export interface StreamSpawnSpec extends SpawnBase {
  /** `capBytes`: its output cap (helper/output-cap.ts), else the helper's --stream-cap-bytes. */
  stream: { attempt: number; capBytes?: number };
  stdoutPath?: undefined;
  stderrPath?: undefined;
}

/** A small file to write before the process starts (a launch's LaunchFile, e.g. a hostfile). */
export interface SpawnFile {
  path: string;
  content: string;
}

/** `env` holds only the overrides; the spawner merges them over its own. */
interface SpawnBase {
  uid: string;
  executable: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /**
   * The task's own directory, made (0700) before `files` and the output files unless it exists:
   * so the agent need not make it. Its parent must exist.
   */
  mkdir?: string;
  /**
   * `mkdir` may be kept as a spare for a later task's (the C helper): after an exit 0 that
   * left it empty, with nothing of the task left running, it is renamed to a spare beside it,
   * which a later spawn's `mkdir` there is renamed from. The agent then finds it gone.
   */
  recycle?: boolean;
  /** Small files to write before the process starts (e.g. mpirun's hostfile). */
  files?: SpawnFile[];
  /** 'process': kills signal this process alone, not its group and session (srun). */
  killScope?: 'process';
  /** fork: the cpulist (`0-3,8`) the process is pinned to (the C helper; Node cannot). */
  cpus?: string;
  /**
   * A follow-on start: the uid of a task whose slots this one takes. If that task still runs in
   * the helper that gets this spawn (or is queued there itself), this one waits there and starts
   * the moment that one's main process is reaped, without asking the agent; otherwise it starts
   * at once. A kill of it while it waits fails it (ECANCELED, "canceled before it started").
   */
  after?: string;
  /**
   * Resource limits of the task on this node (the pool, not the helper, reads them: it sends
   * `cgroups` (cgroup v1) or `cgroupLimits` (cgroup v2) instead; pool-limits.ts).
   */
  limits?: TaskLimits;
  /**
   * cgroup v1 directories the task starts in, each `<the helper's own cgroup>/<base>/<task>` of
   * one hierarchy (memory, pids, cpu), made and limited by the pool: the helper moves itself into
   * each (its cgroup.procs) around the fork, so the task starts inside before it runs anything,
   * and back into the one two levels up. One that cannot be entered fails the spawn.
   */
  cgroups?: string[];
  /**
   * cgroup v2 (a helper started with `--cgroup-limits`): files of the task's own cgroup and what
   * to write in them (`{"memory.max": "33554432"}`), before the task starts in it. One that
   * cannot be written is said in an error event, and the task runs without it. With memory.max,
   * the exit carries `oomKills` (memory.events) when the kernel killed any of the task.
   */
  cgroupLimits?: Record<string, string>;
}

/** What a task may use on its node; unset: no limit. */
export interface TaskLimits {
  /** Memory (RAM; no swap beyond it), in bytes. */
  memoryBytes?: number;
  /** Processes and threads at once. */
  pids?: number;
  /** CPU time, in cores (a fraction is allowed): the CFS quota per 100 ms period. */
  cpus?: number;
}

/** Start a process (a task, or one rank of it). */
export type SpawnRequest = { op: 'spawn' } & SpawnSpec;

/** Signal a running task, or drop a queued one (ECANCELED); any other uid is ignored. */
export interface KillRequest {
  op: 'kill';
  uid: string;
  signal: KillSignal;
}

/** Stop: kill every task, report, exit (the way a master in keep mode ends its helpers). */
export interface EndRequest {
  op: 'end';
}

/** Ask for a status event. */
export interface StatusRequest {
  op: 'status';
}

/** A line to a helper. */
export type HelperRequest = SpawnRequest | KillRequest | EndRequest | StatusRequest;

/**
 * What the exit of a 'stream' spawn adds: the last TAIL_BYTES (src/lib/file-tail.ts) bytes of
 * its stdout and stderr read up to its exit, in base64, and how many bytes each had.
 */
export interface ExitTails {
  stdoutTail: string;
  stderrTail: string;
  stdoutBytes: number;
  stderrBytes: number;
  /** Bytes its output cap dropped by its exit (output-cap.ts); absent when none. */
  dropped?: number;
}

/** A task's exit as a helper says it. */
export type HelperExit = {
  ev: 'exited';
  uid: string;
  exitCode: number | null;
  signal: string | null;
  t?: number;
  /** OOM kills in the task's cgroup v2 (with a memory.max of cgroupLimits); absent: none. */
  oomKills?: number;
  /** Nothing of the task is left: its cgroup was empty at its exit (the C helper). */
  clean?: true;
  /** Its own directory (SpawnSpec.recycle) became a spare for a later task's: it is gone. */
  recycled?: true;
} & Partial<ExitTails>;

/** A spawn that never ran (or a queued one dropped). */
export interface HelperFailure {
  ev: 'failed';
  uid: string;
  code: string;
  message: string;
}

/** The answer to a status request. */
export interface HelperStatus {
  ev: 'status';
  /** The tasks whose main process runs, and its pid. */
  running: { uid: string; pid: number }[];
  /** The uids of queued spawns (`after`). */
  queued: string[];
  /** The last (up to 1,024) exited and failed events, oldest first, as they were sent. */
  ended: (HelperExit | HelperFailure)[];
}

/** A line from a helper. */
export type HelperEvent =
  | {
      ev: 'ready';
      pid: number;
      tracking: TrackingKind;
      markPrefix: string;
      why?: string;
      /** Sent to a master that connected to the keep socket. */
      reattached?: true;
    }
  | { ev: 'started'; uid: string; pid: number; t?: number }
  | HelperExit
  | HelperFailure
  | { ev: 'error'; message: string }
  | { ev: 'lost'; uid: string; attempt: number; errno: string; file?: string }
  | HelperStatus;
