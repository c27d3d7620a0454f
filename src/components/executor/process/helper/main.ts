/**
 * Spawner helper: a small long-lived Node process that forks tasks for the agent, because
 * forking from the agent's big heap is slow (docs/architecture.md). It imports Node built-ins,
 * the files of this folder and three dependency-free files of src/lib only (errno-text,
 * file-tail, output-frames; fenced in eslint.config.mjs), so it starts fast and stays small. It
 * speaks the line protocol of protocol.ts on stdin/stdout (types only: erased at run time).
 *
 * Arguments: `--cgroup BASE` (task cgroups under BASE, made by the pool; `--cgroup-limits`, with
 * `cgroupLimits` in spawns, and `--cgroup-outer DIR`: tracking.ts CgroupLayout), `--kill-grace-ms N`
 * (between the SIGTERM and the SIGKILL of what a task leaves behind; default 3000),
 * `--stream PATH` (the stream file of 'stream' spawns, stream-output.ts; without it they fail;
 * `--stream-cap-bytes N`, `--stream-rotate-bytes N`, `--stream-keep-bytes N`: its cap, rotation)
 * `--hold-ms N` (while a spawn is queued, events wait up to N ms from the first one held,
 * errors excepted; default 0) and `--keep PATH --keep-ms N` (keep mode: the loss of the master
 * detaches the helper, its tasks run on and a new master re-attaches through the socket PATH;
 * master-link.ts). A spawn `after` a task that runs or is queued here waits behind it and starts
 * when its main process is reaped (start-queue.ts); a kill of it drops it (ECANCELED).
 * `{"op":"status"}` gets a status event (recent-ends.ts); `{"op":"end"}` stops the helper.
 * `files` ({path, content}[], e.g. mpirun's hostfile) are written before the task starts; it
 * starts inside the cgroup v1 directories `cgroups` (its limits, set by the pool). Every
 * task gets PF_TASK_MARK in its environment. A kill reaches every process of the task, or, for a
 * spawn with `killScope: 'process'` (srun), the task's process alone; when a task's main process
 * exits, what it left behind gets SIGTERM, then SIGKILL after the grace (tracking.ts).
 * When stdin ends (the agent closed it or died; with --keep, when no master re-attached in time),
 * on `end`, or on SIGTERM or SIGHUP, it SIGKILLs every task it still runs and all they left, waits
 * for them and exits, so no task outlives the agent.
 *
 * This is the fallback of the C helper (native/spawner/pf-spawner.c), which has the same protocol
 * and semantics and needs ~1/9 of the CPU per spawn: keep the two in step (the integration tests
 * run both). One difference: Node cannot pin a task to `cpus` (fork), which the C helper does.
 * Both refuse a NUL byte in the executable, an argument, the environment, cwd or a path with a
 * failed event (EINVAL), and name the working directory when it is what is wrong.
 *
 * The exit of a 'stream' task must follow the frames of all it wrote before it exited, and must
 * not wait for what it left behind (which may hold its pipes until the kill grace ends it). So
 * the exited event waits two loop turns, not for EOF: 'exit' comes from SIGCHLD in libuv's poll
 * phase (turn N); the next turn's poll (N+1) polls every pipe of the task, readable since before
 * the exit, and libuv reads a readable stream until a short read finds it empty; Node hands each
 * chunk to 'data' at once (or in the next ticks); then the check phase of N+1 runs the event.
 * The poll of turn N is not enough: it may not have polled the pipes at all, when the task
 * started in that same turn (libuv adds new fds to epoll at the start of a poll), as a fast
 * task spawned in a burst of requests does. The pipes' 'close' (EOF) then ends the task's
 * output: its end frame.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { errnoOf, errnoText } from '../../../../lib/errno-text';
import { inCgroups, TrackingError, type TrackedTask, type TrackingOptions } from './tracking';
import { trackingOf } from './tracking-args';
import { StreamFile, type TaskOutput } from './stream-output';
import { StartQueue } from './start-queue';
import { isKillRequest, isSpawnRequest, nulField } from './requests';
import { MARK_VAR } from './kill-session';
import { cwdProblem, makeTaskDir } from './task-dir';
import { keepArgs, MasterLink } from './master-link';
import { RecentEnds, statusLine } from './recent-ends';
import type { HelperEvent, KillSignal, SpawnRequest } from './protocol';

/** The tasks whose main process runs (or is starting), and those processes' pids. */
const children = new Map<string, { child: ChildProcess; task: TrackedTask }>();
const mains = new Set<number>();
let outbox: string[] = [];
/** The helper's environment, read once: process.env is slow to copy on every spawn. */
const baseEnv: Record<string, string | undefined> = { ...process.env };
/** Files the helper writes or truncates: rw-r--r-- (before the umask), as pf-spawner. */
/** The task's files are its owner's alone (as every file of a session). */
const FILE_MODE = 0o600;

let stopping = false;
let left = false;
/** Exits of 'stream' tasks waiting for the turn that read what the task wrote. */
let pendingExits = 0;
let flushQueued = false;

/** The value after `--name` on the command line. */
function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
}

const killGraceMs = Number(option('kill-grace-ms') ?? 3000);
const holdMs = Number(option('hold-ms') ?? 0);
/** Held events (holdMs) are due, or an error is among them: never held. */
let heldTimer: NodeJS.Timeout | undefined;
let urgent = false;
/** Marks are unique on the machine: this helper's pid, its start time, then the task's serial. */
const markPrefix = `pf.${process.pid}.${Date.now().toString(36)}.`;
let serial = 0;

const kept = keepArgs(option('keep'), option('keep-ms'));
if (kept.error !== undefined) {
  process.stderr.write(`spawner-main: ${kept.error}\n`);
  process.exit(64);
}
// The agent gone means nobody reads our output: stop rather than crash on EPIPE (or, with
// --keep, wait for another master).
const link = new MasterLink(kept.keep, {
  lines: (lines) => {
    for (const line of lines) handleLine(line);
    flushKills();
  },
  gone: stop,
  ready: () => readyEvent(),
  error: (message) => emit({ ev: 'error', message }),
});

/** The last exited and failed events, as sent (the status event's `ended`). */
const recent = new RecentEnds();

/** Queues an event; all events of one loop turn go out in a single write. */
function emit(ev: HelperEvent): void {
  const line = JSON.stringify(ev);
  if (ev.ev === 'exited' || ev.ev === 'failed') recent.add(line);
  if (link.broken) return;
  if (ev.ev === 'error') urgent = true;
  outbox.push(line);
  schedule();
}

/** The status event (never held). */
function emitStatus(): void {
  const running = [...children.values()].flatMap(({ task: { uid, pid } }) =>
    pid === undefined ? [] : [{ uid, pid }],
  );
  urgent = true;
  outbox.push(statusLine(running, queue.uids(), recent.list()));
  schedule();
}

function schedule(): void {
  if (flushQueued) return;
  flushQueued = true;
  setImmediate(flush);
}

/**
 * The turn's frames, then its events: an exit event follows its task's frames, and the lost
 * events of frames not written come first (before the exits they concern). While a spawn is
 * queued, events wait holdMs from the first one held (one write at most per holdMs).
 */
function flush(): void {
  flushQueued = false;
  const lost = stream?.flush() ?? [];
  if (lost.length > 0) {
    const events = lost.map((l): HelperEvent => ({ ev: 'lost', ...l }));
    outbox = [...events.map((ev) => JSON.stringify(ev)), ...outbox];
  }
  if (outbox.length === 0 || link.broken) return;
  if (holdMs > 0 && queue.size > 0 && !urgent) {
    heldTimer ??= setTimeout(writeEvents, holdMs);
    return;
  }
  writeEvents();
}

function writeEvents(): void {
  clearTimeout(heldTimer);
  heldTimer = undefined;
  urgent = false;
  if (outbox.length === 0 || link.broken) return;
  const text = outbox.join('\n') + '\n';
  outbox = [];
  link.write(text);
}

/** A byte count after `--name` (a whole number >= 1), or undefined. */
function bytesOption(name: string): number | undefined {
  const n = Number(option(name));
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

/** The stream file (`--stream PATH`); a helper that cannot open it cannot start (exit 66). */
const stream = ((): StreamFile | undefined => {
  const file = option('stream');
  if (file === undefined) return undefined;
  try {
    return new StreamFile(file, {
      schedule,
      error: (message) => emit({ ev: 'error', message }),
      capBytes: bytesOption('stream-cap-bytes'),
      rotateBytes: bytesOption('stream-rotate-bytes'),
      keepBytes: bytesOption('stream-keep-bytes'),
    });
  } catch (e) {
    const text = errnoText(errnoOf(e), e);
    process.stderr.write(`spawner-main: cannot open the output stream '${file}': ${text}\n`);
    process.exit(66);
  }
})();

/** Why a spawn's 'stream' cannot be had here (EINVAL), as pf-spawner says it. */
function streamProblem(m: SpawnRequest): string | undefined {
  if (m.stream === undefined) return undefined;
  if (stream === undefined) return "output 'stream' needs a helper started with --stream";
  if (Buffer.byteLength(m.uid) > 0xffff) {
    return 'a uid of more than 65535 bytes does not fit in a stream frame';
  }
  return undefined;
}

function doSpawn(m: SpawnRequest): void {
  const { uid } = m;
  serial += 1;
  const task: TrackedTask = {
    uid,
    serial,
    mark: `${markPrefix}${serial}`,
    processOnly: m.killScope === 'process',
    ...(m.cgroupLimits === undefined ? {} : { limits: m.cgroupLimits }),
  };
  if (children.has(uid) || queue.has(uid)) {
    const what = children.has(uid) ? 'running' : 'queued';
    emit({ ev: 'failed', uid, code: 'EEXIST', message: `task '${uid}' is already ${what}` });
    return;
  }
  const refused = streamProblem(m);
  if (refused !== undefined) {
    emit({ ev: 'failed', uid, code: 'EINVAL', message: refused });
    return;
  }
  const nul = nulField(m);
  if (nul !== undefined) {
    emit({ ev: 'failed', uid, code: 'EINVAL', message: `${nul} contains a NUL byte` });
    return;
  }
  const unmade = m.mkdir === undefined ? undefined : makeTaskDir(m.mkdir);
  if (unmade !== undefined) return emit({ ev: 'failed', uid, ...unmade });
  for (const f of m.files ?? []) {
    try {
      writeFileSync(f.path, f.content, { mode: FILE_MODE });
    } catch (e) {
      const code = errnoOf(e);
      emit({ ev: 'failed', uid, code, message: `cannot write '${f.path}': ${errnoText(code, e)}` });
      return;
    }
  }
  const fds: number[] = [];
  let out: TaskOutput | undefined;
  try {
    for (const path of m.stream === undefined ? [m.stdoutPath, m.stderrPath] : []) {
      try {
        fds.push(openSync(path, 'w', FILE_MODE));
      } catch (e) {
        const code = errnoOf(e);
        const message = `cannot open '${path}' for writing: ${errnoText(code, e)}`;
        emit({ ev: 'failed', uid, code, message });
        return;
      }
    }
    const env: Record<string, string> = { ...baseEnv, ...m.env, [MARK_VAR]: task.mark };
    // Node cannot set a CPU affinity: a task asking `cpus` runs unpinned, and PF_CPUS says so.
    if (m.cpus !== undefined) env.PF_CPUS = '';
    const child = tracking.start(task, () =>
      inCgroups(m.cgroups ?? [], () =>
        spawn(m.executable, m.args, {
          cwd: m.cwd,
          env,
          detached: true, // own session and process group, so kill reaches the task's children
          stdio: m.stream === undefined ? ['ignore', fds[0], fds[1]] : ['ignore', 'pipe', 'pipe'],
        }),
      ),
    );
    if (child.pid !== undefined) task.pid = child.pid;
    if (m.stream !== undefined) {
      out = stream!.task(uid, m.stream.attempt, m.stream.capBytes);
      // none after EMFILE or ENFILE: then 'error' comes, and abandons it
      if (child.stdout !== null && child.stderr !== null) out.attach(child.stdout, child.stderr);
    }
    watch(task, child, m.cwd, out);
  } catch (e) {
    out?.abandon();
    tracking.ended(task); // removes its cgroup if it got one
    if (e instanceof TrackingError) {
      emit({ ev: 'failed', uid, code: e.code, message: e.message });
      return;
    }
    // spawn throws synchronously on bad arguments, and on exec errors other than EACCES,
    // EAGAIN, EMFILE, ENFILE and ENOENT (e.g. ENOTDIR for a cwd that is a file)
    const code = errnoOf(e);
    emit({ ev: 'failed', uid, ...(cwdProblem(m.cwd) ?? { code, message: errnoText(code, e) }) });
  } finally {
    for (const fd of fds) closeSync(fd);
  }
}

/** `out`: a 'stream' task's output. */
function watch(task: TrackedTask, child: ChildProcess, cwd: string, out?: TaskOutput): void {
  const { uid } = task;
  children.set(uid, { child, task });
  if (task.pid !== undefined) mains.add(task.pid);
  let spawned = false;
  child.once('spawn', () => {
    spawned = true;
    emit({ ev: 'started', uid, pid: child.pid as number, t: Date.now() }); // set once 'spawn' fired
  });
  child.on('error', (e) => {
    if (spawned) return; // a failed kill; the exit still comes
    out?.abandon();
    children.delete(uid);
    if (task.pid !== undefined) mains.delete(task.pid);
    tracking.ended(task);
    // Node reports a bad cwd as an error of the executable: say which one it was.
    const code = errnoOf(e);
    emit({ ev: 'failed', uid, ...(cwdProblem(cwd) ?? { code, message: errnoText(code, e) }) });
    queue.release(uid);
    maybeExit();
  });
  child.once('exit', (exitCode, signal) => {
    if (!spawned) return;
    const t = Date.now();
    children.delete(uid);
    mains.delete(task.pid!);
    const oomKills = tracking.oomKills(task); // before ended() removes its cgroup
    const oom = oomKills > 0 ? { oomKills } : {};
    tracking.ended(task); // what it left behind: SIGTERM, then SIGKILL after the grace
    if (out === undefined) {
      emit({ ev: 'exited', uid, exitCode, signal, t, ...oom });
      queue.release(uid); // at once: the slots it held never idle
      maybeExit();
      return;
    }
    queue.release(uid);
    pendingExits += 1;
    // in the check phase of this turn, then of the next, whose poll read all it wrote (see the
    // top of this file)
    setImmediate(() =>
      setImmediate(() => {
        pendingExits -= 1;
        emit({ ev: 'exited', uid, exitCode, signal, ...out.exit(), t, ...oom });
        maybeExit();
      }),
    );
  });
}

/** Kills asked for in one chunk of input, sent together so /proc is read once per chunk. */
/** Kills asked in this turn, by signal: each signal's tasks are signaled together. */
const kills = new Map<KillSignal, TrackedTask[]>();

function doKill(uid: string, signal: KillSignal): void {
  if (queue.cancel(uid)) {
    emit({ ev: 'failed', uid, code: 'ECANCELED', message: 'canceled before it started' });
    return;
  }
  const task = children.get(uid)?.task;
  if (task?.pid === undefined) return; // already exited or never started
  const list = kills.get(signal);
  if (list === undefined) kills.set(signal, [task]);
  else list.push(task);
}

function flushKills(): void {
  const asked = [...kills];
  kills.clear();
  for (const [signal, tasks] of asked) tracking.kill(tasks, signal);
}

function handleLine(line: string): void {
  if (stopping || line.trim() === '') return; // after an end, nothing more is asked
  let m: unknown;
  try {
    m = JSON.parse(line);
  } catch {
    emit({ ev: 'error', message: `not JSON: ${line.slice(0, 200)}` });
    return;
  }
  const op = (m as { op?: unknown } | null)?.op;
  if (op === 'spawn' && isSpawnRequest(m)) spawnOrQueue(m);
  else if (op === 'kill' && isKillRequest(m)) doKill(m.uid, m.signal);
  else if (op === 'end') stop();
  else if (op === 'status') emitStatus();
  else emit({ ev: 'error', message: `bad request: ${line.slice(0, 200)}` });
}

/** A spawn after a task that runs or is queued here waits behind it; any other starts now. */
function spawnOrQueue(m: SpawnRequest): void {
  const { uid, after } = m;
  const known = (u: string): boolean => children.has(u) || queue.has(u);
  if (after !== undefined && known(after) && !known(uid)) queue.add(m, after);
  else doSpawn(m); // a duplicate uid fails there (EEXIST)
}

/** Queued spawns; `start` says whether the task now runs (a failed start releases its line). */
const queue = new StartQueue<SpawnRequest>((m) => {
  doSpawn(m);
  return children.has(m.uid);
});

/** Stop: kill every task and leftover; the loop empties and the process exits on its own. */
function stop(): void {
  if (stopping) return;
  stopping = true;
  for (const uid of queue.clear()) {
    const message = 'canceled before it started: the spawner helper is stopping';
    emit({ ev: 'failed', uid, code: 'ECANCELED', message });
  }
  kills.clear();
  tracking.stop([...children.values()].map((c) => c.task));
  link.stop();
  maybeExit();
}

function maybeExit(): void {
  if (stopping && !left && children.size === 0 && pendingExits === 0 && tracking.idle()) {
    left = true;
    tracking.leave();
    stream?.finish(); // the end frames of what is still open
    flush();
    link.finish();
    process.exitCode = 0;
  }
}

const trackingOptions: TrackingOptions = {
  killGraceMs,
  error: (message) => emit({ ev: 'error', message }),
  settled: () => maybeExit(),
  runningMain: (pid) => mains.has(pid),
};
/** Why task cgroups were asked for and cannot be had; undefined when they were not asked. */
const { tracking, why: cgroupWhy } = trackingOf(process.argv, trackingOptions);

// Ctrl-C reaches the whole foreground group: leave the decision to the agent (stdin end).
process.on('SIGINT', () => undefined);
process.on('SIGTERM', stop);
process.on('SIGHUP', stop);

function readyEvent(): HelperEvent {
  const why = cgroupWhy === undefined ? {} : { why: cgroupWhy };
  return { ev: 'ready', pid: process.pid, tracking: tracking.kind, markPrefix, ...why };
}
emit(readyEvent());
