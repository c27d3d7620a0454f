/**
 * Starting one function worker process: its command (pinned to its cores, killed with the
 * agent), its log files, and the end of its stderr once it died.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { UsageError } from '../../../errors';
import { compiledSibling } from '../../../lib/dist-path';

/** The compiled Node worker (from dist/; under ts-jest, the build's copy: `npm run build`). */
export function workerScript(): string {
  const script = compiledSibling(__dirname, 'worker/main');
  if (!fs.existsSync(script)) {
    throw new UsageError(`function worker not found at '${script}': run 'npm run build'`);
  }
  return script;
}

/** The first executable named `name` on PATH, or undefined. */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir === '') continue;
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The languages a worker can be started in. */
export type WorkerLanguage = 'node' | 'python';

/**
 * The Python worker, shipped beside dist/ (package.json `files`): `<root>/workers/`, where root
 * is the package (from dist/src/...) or the repository (from src/ under ts-jest).
 */
export function pythonWorkerScript(): string {
  const rel = ['workers', 'python_worker.py'];
  const candidates = [
    path.resolve(__dirname, '..', '..', '..', '..', '..', ...rel),
    path.resolve(__dirname, '..', '..', '..', '..', ...rel),
  ];
  const script = candidates.find((c) => fs.existsSync(c));
  if (script === undefined) {
    throw new UsageError(`Python function worker not found at '${candidates[0]}'`);
  }
  return script;
}

/** `python` (a path, or a name looked up on PATH) as an executable path; UsageError if none. */
export function pythonInterpreter(python: string): string {
  const file = python.includes('/') ? path.resolve(python) : onPath(python);
  try {
    if (file !== undefined) {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    }
  } catch {
    // not executable: said below
  }
  throw new UsageError(
    `Python interpreter '${python}' for function workers not found` +
      `${python.includes('/') ? ' or not executable' : ' on PATH'} (set agent.python)`,
  );
}

/** How workers are started: found once per pool. */
export interface WorkerCommand {
  /** The worker's script (for the log). */
  script: string;
  /** The program and its arguments: the interpreter and the script. */
  argv: string[];
  /** util-linux setpriv: the worker gets SIGKILL when the agent dies (PR_SET_PDEATHSIG). */
  setpriv?: string;
  /** util-linux taskset: pins a worker to its cores. */
  taskset?: string;
}

/** The command of `language` workers; `python`: the interpreter of Python ones (python3). */
export function workerCommand(
  language: WorkerLanguage = 'node',
  python = 'python3',
): WorkerCommand {
  let cmd: WorkerCommand;
  if (language === 'python') {
    const script = pythonWorkerScript();
    // -u: what functions print reaches the log file as it is printed (and survives a crash)
    cmd = { script, argv: [pythonInterpreter(python), '-u', script] };
  } else {
    const script = workerScript();
    // No execArgv: the worker must not inherit the agent's (or jest's) flags.
    cmd = { script, argv: [process.execPath, script] };
  }
  const setpriv = onPath('setpriv');
  const taskset = onPath('taskset');
  if (setpriv !== undefined) cmd.setpriv = setpriv;
  if (taskset !== undefined) cmd.taskset = taskset;
  return cmd;
}

export interface WorkerSpawn {
  index: number;
  logDir: string;
  /** Its log files are `<logDir>/<logName>.<index>.out|.err`. */
  logName: string;
  env: NodeJS.ProcessEnv;
  /** The cpulist (`0-3,8`) to pin the worker to; none: not pinned. */
  cpus?: string;
}

/** A started worker process and the pipes of its protocol. */
export interface WorkerProcess {
  proc: ChildProcess;
  pid: number;
  requests: Writable;
  replies: Readable;
  errPath: string;
  /** Where this process's part of the stderr file starts. */
  errStart: number;
}

/**
 * Starts worker `index`: its own process group (a kill reaches what it started), fds 3 and 4
 * as pipes, stdout and stderr appended to `<logDir>/<logName>.<index>.out|.err` after a line that
 * tells this process's part from its predecessors'.
 */
export function spawnWorker(cmd: WorkerCommand, w: WorkerSpawn): WorkerProcess {
  const base = path.join(w.logDir, `${w.logName}.${w.index}`);
  const header = `--- pilotfish function worker ${w.index} starts at ${new Date().toISOString()}\n`;
  const out = fs.openSync(`${base}.out`, 'a', 0o600);
  const err = fs.openSync(`${base}.err`, 'a', 0o600);
  let errStart: number;
  let proc: ChildProcess;
  try {
    fs.writeSync(out, header);
    fs.writeSync(err, header);
    errStart = fs.fstatSync(err).size;
    const argv = [...cmd.argv];
    if (w.cpus !== undefined && w.cpus !== '' && cmd.taskset !== undefined) {
      argv.unshift(cmd.taskset, '-c', w.cpus);
    }
    if (cmd.setpriv !== undefined) argv.unshift(cmd.setpriv, '--pdeathsig', 'KILL');
    proc = spawn(argv[0]!, argv.slice(1), {
      env: w.env,
      stdio: ['ignore', out, err, 'pipe', 'pipe'],
      detached: true,
    });
  } finally {
    fs.closeSync(out);
    fs.closeSync(err);
  }
  const requests = proc.stdio[3] as Writable;
  const replies = proc.stdio[4] as Readable;
  return { proc, pid: proc.pid ?? -1, requests, replies, errPath: `${base}.err`, errStart };
}

/** The last lines of what the worker wrote to stderr (at most `max` characters), or ''. */
export function stderrTail(p: WorkerProcess, max = 1500): string {
  let fd: number | undefined;
  try {
    fd = fs.openSync(p.errPath, 'r');
    const size = fs.fstatSync(fd).size;
    const from = Math.max(p.errStart, size - 4 * max);
    const buf = Buffer.alloc(Math.max(0, size - from));
    fs.readSync(fd, buf, 0, buf.length, from);
    const text = buf.toString('utf8').trimEnd();
    return text.length <= max ? text : `...${text.slice(text.length - max)}`;
  } catch {
    return '';
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** SIGKILLs the worker's process group (it and what it started); quiet if all are gone. */
export function killGroup(pid: number): void {
  if (pid <= 0) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone already
  }
}
