/**
 * Task cgroups: where the machine offers a writable cgroup v2 tree with `cgroup.kill` (Linux >=
 * 5.14), every task runs in a cgroup of its own, and a kill reaches every process in it, those
 * that called setsid or double-forked included: a cgroup is inherited by every child and cannot
 * be left without write access to the tree. No cpu or memory controller is needed (the v2 mount
 * may have none): only `cgroup.procs`, `cgroup.kill` and `cgroup.events`.
 *
 * Layout: the pool makes `<own v2 cgroup>/pilotfish-<agent pid>-<random>` (one per pool, so per
 * agent), each helper moves itself into `<base>/<helper pid>` (its home) and starts each task in
 * `<home>/<serial>`, which it removes once empty; the last one out removes the base.
 * pf-spawner.c does the same in C. Node built-ins only: the spawner helper imports this.
 */
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmdirSync,
  watch,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { errnoOf, errnoText } from '../../../../lib/errno-text';

/** The cgroup v2 directory of this process, or why there is none. */
export function ownCgroup(): { dir: string } | { why: string } {
  let mountinfo: string;
  let cgroup: string;
  try {
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
    cgroup = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return { why: 'no /proc/self/mountinfo or /proc/self/cgroup (not Linux?)' };
  }
  return cgroupDir(mountinfo, cgroup);
}

/**
 * The cgroup v2 directory of a process from its /proc/<pid>/mountinfo and /proc/<pid>/cgroup, or
 * why there is none: the mount of the v2 tree, joined with the process's path in the tree (its
 * `0::` line) relative to the root of the tree the mount shows (a container's may show a subtree).
 */
export function cgroupDir(mountinfo: string, cgroup: string): { dir: string } | { why: string } {
  // "id parent major:minor root mountpoint options [optional...] - fstype source ..."
  const v2 = mountinfo
    .split('\n')
    .map((l) => l.split(' '))
    .find((f) => f.indexOf('-') > 0 && f[f.indexOf('-') + 1] === 'cgroup2');
  if (v2 === undefined) return { why: 'no cgroup v2 file system is mounted' };
  const own = cgroup.split('\n').find((l) => l.startsWith('0::'));
  if (own === undefined) return { why: 'this process is in no cgroup v2' };
  const root = unescape(v2[3]!);
  const rel = path.posix.relative(root, own.slice(3));
  if (rel.startsWith('..')) {
    return { why: `own cgroup '${own.slice(3)}' is outside the mounted tree '${root}'` };
  }
  return { dir: path.posix.join(unescape(v2[4]!), rel) };
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescape(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/**
 * Makes a pool's base cgroup under this process's own, or says why task cgroups cannot be had
 * here (no v2 tree, not writable, no cgroup.kill).
 */
export function makeCgroupBase(): { dir: string } | { why: string } {
  const own = ownCgroup();
  if ('why' in own) return own;
  const dir = path.join(own.dir, `pilotfish-${process.pid}-${randomBytes(3).toString('hex')}`);
  try {
    mkdirSync(dir);
  } catch (e) {
    return { why: `cannot create '${dir}': ${errText(e)}` };
  }
  if (!existsSync(path.join(dir, 'cgroup.kill'))) {
    rmdirSync(dir);
    return { why: 'the kernel has no cgroup.kill (Linux >= 5.14 is needed)' };
  }
  return { dir };
}

/** The `oom_kill` count of a memory.oom_control (v1) or memory.events (v2); 0 if none. */
export function oomKillsOf(text: string): number {
  const m = /^oom_kill (\d+)$/m.exec(text);
  return m === null ? 0 : Number(m[1]);
}

/** SIGKILLs every process in the cgroup and those below it, forks racing the kill included. */
export function killCgroup(dir: string): void {
  writeFileSync(path.join(dir, 'cgroup.kill'), '1');
}

/** The processes in the cgroup itself (not below it); [] once it is gone. */
export function procsIn(dir: string): number[] {
  try {
    return readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * The processes in the cgroup and in those below it (a task may make cgroups of its own: an
 * agent run as a task does); [] once it is gone.
 */
export function cgroupProcs(dir: string): number[] {
  let pids: number[];
  try {
    pids = readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
  for (const sub of subgroups(dir)) pids.push(...cgroupProcs(path.join(dir, sub)));
  return pids;
}

/** The names of the cgroups right below `dir`. */
function subgroups(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    return [];
  }
}

/** Whether processes remain in the cgroup or below it (`populated` of cgroup.events). */
export function populated(dir: string): boolean {
  try {
    return /^populated 1$/m.test(readFileSync(path.join(dir, 'cgroup.events'), 'utf8'));
  } catch {
    return false;
  }
}

/**
 * Calls `then` once the cgroup holds no process (at once if it is empty): the kernel signals a
 * change of `populated` through cgroup.events, so no polling. Returns a function that stops it.
 */
export function whenEmpty(dir: string, then: () => void): () => void {
  let done = false;
  let watcher: ReturnType<typeof watch> | undefined;
  const stop = (): void => {
    done = true;
    watcher?.close();
  };
  const check = (): void => {
    if (done || populated(dir)) return;
    stop();
    then();
  };
  try {
    watcher = watch(path.join(dir, 'cgroup.events'), check);
    watcher.on('error', check);
  } catch {
    // gone already: check() finds it empty
  }
  check(); // it may have emptied before the watch began
  return stop;
}

/**
 * Kills everything in `dir` and below, waits until it is empty (at most `timeoutMs`), then removes
 * it and every cgroup below it. Resolves with what was left, if anything (a process stuck in the
 * kernel), for a log line; never rejects.
 */
export function removeCgroupTree(dir: string, timeoutMs: number): Promise<string | undefined> {
  if (!existsSync(dir)) return Promise.resolve(undefined);
  try {
    killCgroup(dir);
  } catch (e) {
    return Promise.resolve(`cannot kill '${dir}': ${errText(e)}`);
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      stop();
      resolve(`'${dir}' still holds processes after ${timeoutMs} ms`);
    }, timeoutMs);
    const stop = whenEmpty(dir, () => {
      clearTimeout(timer);
      resolve(removeTree(dir)?.message);
    });
  });
}

/**
 * rmdir of a cgroup, and first of the empty ones below it (where a task made some); undefined
 * once it is gone, else why not (`busy`: processes remain).
 */
export function removeTree(dir: string): { busy: boolean; message: string } | undefined {
  const fail = (e: unknown): { busy: boolean; message: string } | undefined => {
    const code = errnoOf(e);
    if (code === 'ENOENT') return undefined;
    return { busy: code === 'EBUSY', message: `cannot remove '${dir}': ${errText(e)}` };
  };
  try {
    rmdirSync(dir);
    return undefined; // the common case: nothing below it
  } catch (e) {
    if (errnoOf(e) !== 'EBUSY') return fail(e);
  }
  for (const sub of subgroups(dir)) {
    const why = removeTree(path.join(dir, sub));
    if (why !== undefined) return why;
  }
  try {
    rmdirSync(dir);
    return undefined;
  } catch (e) {
    return fail(e);
  }
}

function errText(e: unknown): string {
  return errnoText(errnoOf(e), e);
}
