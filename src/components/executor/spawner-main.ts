/**
 * Spawner helper: a small long-lived Node process that forks tasks for the agent, because
 * forking from the agent's big heap is slow (DESIGN.md §6). It imports node built-ins only, so
 * it starts fast and stays small. It speaks the line protocol of spawner-protocol.ts on
 * stdin/stdout (types only: erased at run time).
 * `files` ({path, content}[], e.g. mpirun's hostfile) are written before the task starts. A kill
 * signals the task's process group and every other process of its session and their descendants
 * (kill-session.ts), or, for a spawn with `killScope: 'process'` (srun), the task's process alone.
 * When stdin ends (the agent closed it or died), or on SIGTERM or SIGHUP, it SIGKILLs every task
 * it still runs, waits for them and exits, so no task outlives the agent.
 *
 * This is the fallback of the C helper (native/spawner/pf-spawner.c), which has the same protocol
 * and semantics and needs ~1/9 of the CPU per spawn: keep the two in step (the integration tests
 * run both). One difference: Node cannot pin a task to `cpus` (fork), which the C helper does.
 * Both refuse a NUL byte in the executable, an argument, the environment, cwd or a path with a
 * failed event (EINVAL), and name the working directory when it is what is wrong.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, statSync, writeFileSync } from 'node:fs';
import type { KillSignal } from './effects';
import { killProcesses, killSessions } from './kill-session';
import type { HelperEvent, KillRequest, SpawnRequest } from './spawner-protocol';

const children = new Map<string, ChildProcess>();
/** Tasks whose kills signal their process alone (killScope 'process'). */
const processOnly = new Set<string>();
let outbox: string[] = [];
/** The helper's environment, read once: process.env is slow to copy on every spawn. */
const baseEnv: Record<string, string | undefined> = { ...process.env };
/** Files the helper writes or truncates: rw-r--r-- (before the umask), as pf-spawner. */
/** The task's files are its owner's alone (as every file of a session). */
const FILE_MODE = 0o600;
let stopping = false;
let stdoutBroken = false;

const ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  ENOEXEC: 'not an executable format',
  ENOTDIR: 'a path component is not a directory',
  EISDIR: 'is a directory',
  E2BIG: 'argument list too long',
  EMFILE: 'too many open files',
  EAGAIN: 'too many processes',
  ENOMEM: 'out of memory',
};

/** Queues an event; all events of one loop turn go out in a single write. */
function emit(ev: HelperEvent): void {
  if (stdoutBroken) return;
  outbox.push(JSON.stringify(ev));
  if (outbox.length === 1) setImmediate(flush);
}

function flush(): void {
  if (outbox.length === 0 || stdoutBroken) return;
  const text = outbox.join('\n') + '\n';
  outbox = [];
  process.stdout.write(text);
}

function errnoOf(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EIO';
}

function describe(code: string, e: unknown): string {
  return ERRNO_TEXT[code] ?? (e instanceof Error ? e.message : String(e));
}

/** The first string the kernel would get that holds a NUL byte, named as pf-spawner names it. */
function nulField(m: SpawnRequest): string | undefined {
  const has = (s: string): boolean => s.includes('\0');
  if (has(m.executable)) return 'executable';
  const arg = m.args.findIndex(has);
  if (arg >= 0) return `args[${arg}]`;
  for (const [k, v] of Object.entries(m.env)) if (has(k) || has(v)) return 'env';
  if (has(m.cwd)) return 'cwd';
  if (has(m.stdoutPath)) return 'stdoutPath';
  if (has(m.stderrPath)) return 'stderrPath';
  const file = (m.files ?? []).findIndex((f) => has(f.path));
  return file >= 0 ? `files.path[${file}]` : undefined;
}

function doSpawn(m: SpawnRequest): void {
  const { uid } = m;
  if (children.has(uid)) {
    emit({ ev: 'failed', uid, code: 'EEXIST', message: `task '${uid}' is already running` });
    return;
  }
  const nul = nulField(m);
  if (nul !== undefined) {
    emit({ ev: 'failed', uid, code: 'EINVAL', message: `${nul} contains a NUL byte` });
    return;
  }
  for (const f of m.files ?? []) {
    try {
      writeFileSync(f.path, f.content, { mode: FILE_MODE });
    } catch (e) {
      const code = errnoOf(e);
      emit({ ev: 'failed', uid, code, message: `cannot write '${f.path}': ${describe(code, e)}` });
      return;
    }
  }
  const fds: number[] = [];
  try {
    for (const path of [m.stdoutPath, m.stderrPath]) {
      try {
        fds.push(openSync(path, 'w', FILE_MODE));
      } catch (e) {
        const code = errnoOf(e);
        const message = `cannot open '${path}' for writing: ${describe(code, e)}`;
        emit({ ev: 'failed', uid, code, message });
        return;
      }
    }
    const env = { ...baseEnv, ...m.env };
    // Node cannot set a CPU affinity: a task asking `cpus` runs unpinned, and PF_CPUS says so.
    if (m.cpus !== undefined) env.PF_CPUS = '';
    const child = spawn(m.executable, m.args, {
      cwd: m.cwd,
      env,
      detached: true, // own process group, so kill reaches the task's children too
      stdio: ['ignore', fds[0], fds[1]],
    });
    if (m.killScope === 'process') processOnly.add(uid);
    watch(uid, child, m.cwd);
  } catch (e) {
    // spawn throws synchronously on bad arguments, and on exec errors other than EACCES,
    // EAGAIN, EMFILE, ENFILE and ENOENT (e.g. ENOTDIR for a cwd that is a file)
    const code = errnoOf(e);
    emit({ ev: 'failed', uid, ...(cwdProblem(m.cwd) ?? { code, message: describe(code, e) }) });
  } finally {
    for (const fd of fds) closeSync(fd);
  }
}

function watch(uid: string, child: ChildProcess, cwd: string): void {
  children.set(uid, child);
  let spawned = false;
  child.once('spawn', () => {
    spawned = true;
    emit({ ev: 'started', uid, pid: child.pid as number }); // set once 'spawn' fired
  });
  child.on('error', (e) => {
    if (spawned) return; // a failed kill; the exit still comes
    children.delete(uid);
    processOnly.delete(uid);
    // Node reports a bad cwd as an error of the executable: say which one it was.
    const code = errnoOf(e);
    emit({ ev: 'failed', uid, ...(cwdProblem(cwd) ?? { code, message: describe(code, e) }) });
    maybeExit();
  });
  child.once('exit', (exitCode, signal) => {
    if (!spawned) return;
    children.delete(uid);
    processOnly.delete(uid);
    emit({ ev: 'exited', uid, exitCode, signal });
    maybeExit();
  });
}

/** Why the task cannot start in `cwd`, in pf-spawner's words; undefined if it can. */
function cwdProblem(cwd: string): { code: string; message: string } | undefined {
  try {
    if (!statSync(cwd).isDirectory()) {
      return {
        code: 'ENOTDIR',
        message: `cannot enter the working directory '${cwd}': ${ERRNO_TEXT.ENOTDIR}`,
      };
    }
    accessSync(cwd, constants.X_OK);
    return undefined;
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'ENOENT') {
      return { code, message: `working directory '${cwd}' does not exist` };
    }
    return {
      code,
      message: `cannot enter the working directory '${cwd}': ${describe(code, e)}`,
    };
  }
}

/** Kills asked for in one chunk of input, sent together so /proc is read once per chunk. */
const kills: Record<KillSignal, { sessions: number[]; processes: number[] }> = {
  SIGTERM: { sessions: [], processes: [] },
  SIGKILL: { sessions: [], processes: [] },
};

function doKill(uid: string, signal: KillSignal): void {
  const pid = children.get(uid)?.pid;
  if (pid === undefined) return; // already exited or never started
  kills[signal][processOnly.has(uid) ? 'processes' : 'sessions'].push(pid);
}

function flushKills(): void {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    const { sessions, processes } = kills[signal];
    kills[signal] = { sessions: [], processes: [] };
    const errors = [...killSessions(sessions, signal), ...killProcesses(processes, signal)];
    for (const message of errors) emit({ ev: 'error', message });
  }
}

function handleLine(line: string): void {
  if (line.trim() === '') return;
  let m: unknown;
  try {
    m = JSON.parse(line);
  } catch {
    emit({ ev: 'error', message: `not JSON: ${line.slice(0, 200)}` });
    return;
  }
  const op = (m as { op?: unknown } | null)?.op;
  if (op === 'spawn' && isSpawnRequest(m)) doSpawn(m);
  else if (op === 'kill' && isKillRequest(m)) doKill(m.uid, m.signal);
  else emit({ ev: 'error', message: `bad request: ${line.slice(0, 200)}` });
}

function isSpawnRequest(m: unknown): m is SpawnRequest {
  const s = m as Partial<SpawnRequest>;
  return (
    typeof s.uid === 'string' &&
    typeof s.executable === 'string' &&
    Array.isArray(s.args) &&
    s.args.every((a) => typeof a === 'string') &&
    typeof s.env === 'object' &&
    s.env !== null &&
    !Array.isArray(s.env) &&
    Object.values(s.env).every((v) => typeof v === 'string') &&
    typeof s.cwd === 'string' &&
    typeof s.stdoutPath === 'string' &&
    typeof s.stderrPath === 'string' &&
    (s.killScope === undefined || s.killScope === 'process') &&
    (s.cpus === undefined || typeof s.cpus === 'string') &&
    (s.files === undefined ||
      (Array.isArray(s.files) &&
        s.files.every(
          (f) =>
            typeof f === 'object' &&
            f !== null &&
            typeof f.path === 'string' &&
            typeof f.content === 'string',
        )))
  );
}

function isKillRequest(m: unknown): m is KillRequest {
  const k = m as { uid?: unknown; signal?: unknown };
  return typeof k.uid === 'string' && (k.signal === 'SIGTERM' || k.signal === 'SIGKILL');
}

/** Stop: kill every task still running; the loop empties and the process exits on its own. */
function stop(): void {
  if (stopping) return;
  stopping = true;
  for (const uid of children.keys()) doKill(uid, 'SIGKILL');
  flushKills();
  process.stdin.destroy();
  maybeExit();
}

function maybeExit(): void {
  if (stopping && children.size === 0) {
    flush();
    process.exitCode = 0;
  }
}

let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  const lines = (pending + chunk).split('\n');
  pending = lines.pop() ?? '';
  for (const line of lines) handleLine(line);
  flushKills();
});
process.stdin.on('end', stop);
process.stdin.on('error', stop);
// The agent gone means nobody reads our output: stop rather than crash on EPIPE.
process.stdout.on('error', () => {
  stdoutBroken = true;
  stop();
});
// Ctrl-C reaches the whole foreground group: leave the decision to the agent (stdin end).
process.on('SIGINT', () => undefined);
process.on('SIGTERM', stop);
process.on('SIGHUP', stop);

emit({ ev: 'ready', pid: process.pid });
