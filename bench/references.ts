/**
 * Reference figures for the `e2e` benchmark, taken in the same run as `exec_tasks_per_s` with
 * the same N tasks of `/bin/true`, as many at once as there are cores:
 *
 * - the machine's spawn limit: a small C program (compiled with `cc` at bench time) that
 *   `posix_spawn`s and `waitpid`s; without a C compiler, `xargs -P cores` stands in and the
 *   figure says so (`helper: 'xargs'`); the same program also runs each task in a sandbox laid
 *   out as pilotfish's (a directory, `task.json`, `stdout` and `stderr` files): the limit for
 *   the same work on this filesystem;
 * - GNU parallel from Debian (`parallel -j cores`), timed from its start to its exit;
 * - Dask distributed from Debian (`/usr/bin/python3`, LocalCluster with one single-threaded
 *   worker process per core), each task `subprocess.run(['/bin/true'])`, timed from the first
 *   `client.map` to the last result of `client.gather` (cluster start-up reported apart).
 *
 * **Skipped figures.** A peer that cannot be run (not installed and not installable, no
 * compiler and no xargs, turned off with PILOTFISH_BENCH_PEERS=0) yields `{ ok: false, reason }`:
 * the benchmark then emits no figure for that metric, nor for the ratios that need it, and
 * prints `bench e2e: skipped METRIC: REASON` on stderr. A figure is never emitted with a
 * made-up or null value.
 *
 * The peers' Debian packages are installed by scripts/bench-deps.sh (root, apt-get; idempotent),
 * which `installPeers()` runs; quick runs (smoke test) never install, they use what is there.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { median, nowNs, removeTree, secondsBetween, sig } from './harness';

/** Debian's interpreter: python3-distributed installs there, not into a pyenv on PATH. */
export const DEBIAN_PYTHON = '/usr/bin/python3';

export type Reference =
  | { ok: true; tasksPerS: number; context: Record<string, string | number | boolean> }
  | { ok: false; reason: string };

interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  secs: number;
}

/** Runs a command to its end; `secs` is spawn to exit. Never rejects for a non-zero exit. */
export function runProcess(
  cmd: string,
  args: readonly string[],
  opts: {
    input?: string;
    timeoutMs?: number;
    env?: NodeJS.ProcessEnv;
    cwd?: string;
    /** Pass the child's stderr through to ours as it comes (then `stderr` is empty). */
    inheritStderr?: boolean;
  } = {},
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const t0 = nowNs();
    const child = spawn(cmd, args, {
      stdio: ['pipe', 'pipe', opts.inheritStderr === true ? 'inherit' : 'pipe'],
      env: opts.env ?? process.env,
      ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on('data', (b: Buffer) => out.push(b));
    child.stderr?.on('data', (b: Buffer) => err.push(b));
    child.stdin?.on('error', () => undefined); // EPIPE if it exits without reading
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code, signal) => {
      const secs = secondsBetween(t0, nowNs());
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString(),
        stderr: Buffer.concat(err).toString(),
        secs,
      });
    });
    child.stdin?.end(opts.input ?? '');
  });
}

function lastLines(text: string, n = 3): string {
  return text.trim().split('\n').slice(-n).join(' | ');
}

function describeExit(r: ProcessResult): string {
  const how = r.signal !== null ? `signal ${r.signal}` : `exit ${r.code}`;
  const tail = lastLines(r.stderr);
  return tail === '' ? how : `${how}: ${tail}`;
}

/** Absolute path of a command on PATH, or undefined. */
export function which(cmd: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const p = path.join(dir, cmd);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      if (fs.statSync(p).isFile()) return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Why each peer cannot run now (undefined: it can). Cheap; used by the smoke test too. */
export interface PeerAvailability {
  parallel: string | undefined;
  dask: string | undefined;
  nginx: string | undefined;
}

export async function peerAvailability(): Promise<PeerAvailability> {
  const parallel =
    which('parallel') === undefined ? "GNU parallel is not installed ('parallel')" : undefined;
  let dask: string | undefined;
  if (!fs.existsSync(DEBIAN_PYTHON)) {
    dask = `${DEBIAN_PYTHON} does not exist`;
  } else {
    const r = await runProcess(DEBIAN_PYTHON, ['-c', 'import distributed'], {
      timeoutMs: 60_000,
    });
    if (r.code !== 0) dask = `Dask distributed is not importable by ${DEBIAN_PYTHON}`;
  }
  const nginx = which('nginx') === undefined ? "nginx is not installed ('nginx')" : undefined;
  return { parallel, dask, nginx };
}

/** PILOTFISH_BENCH_PEERS=0 (or false, no) turns the peers off, e.g. while profiling. */
export function peersOff(env: NodeJS.ProcessEnv = process.env): boolean {
  return ['0', 'false', 'no'].includes(env.PILOTFISH_BENCH_PEERS ?? '');
}

/**
 * Which peers a benchmark may run now, and why not: none when turned off; what is installed for
 * a quick run (which never installs, and says so in its reasons); for a full run, what is there
 * after scripts/bench-deps.sh.
 */
export async function peersForRun(
  quick: boolean,
  log: (line: string) => void,
): Promise<PeerAvailability> {
  if (peersOff()) {
    const off = 'PILOTFISH_BENCH_PEERS=0';
    return { parallel: off, dask: off, nginx: off };
  }
  if (!quick) return installPeers(log);
  const here = await peerAvailability();
  const why = (r: string | undefined): string | undefined =>
    r === undefined ? undefined : `${r} (quick runs do not install peers)`;
  return { parallel: why(here.parallel), dask: why(here.dask), nginx: why(here.nginx) };
}

/** scripts/bench-deps.sh, from bench/ (ts-jest) or dist/bench/ (npm run bench). */
export function benchDepsScript(dir: string = __dirname): string {
  for (const rel of ['../scripts/bench-deps.sh', '../../scripts/bench-deps.sh']) {
    const p = path.resolve(dir, rel);
    if (fs.existsSync(p)) return p;
  }
  return path.resolve(dir, '../scripts/bench-deps.sh');
}

/**
 * Runs scripts/bench-deps.sh (installs GNU parallel and Dask when root and apt work), then
 * says which peers can run. The script's own complaint becomes the reason of each peer still
 * missing.
 */
export async function installPeers(log: (line: string) => void): Promise<PeerAvailability> {
  const before = await peerAvailability();
  if (Object.values(before).every((r) => r === undefined)) return before;
  const script = benchDepsScript();
  let complaint = '';
  if (!fs.existsSync(script)) {
    complaint = `${script} not found`;
  } else {
    log(`installing peers with ${path.relative(process.cwd(), script)}`);
    const r = await runProcess('bash', [script], { timeoutMs: 900_000 });
    if (r.code !== 0) complaint = describeExit(r);
    else log(`installed peers in ${r.secs.toFixed(1)} s`);
  }
  const after = await peerAvailability();
  const why = (r: string | undefined): string | undefined =>
    r === undefined ? undefined : complaint === '' ? r : `${r} (bench-deps.sh: ${complaint})`;
  return { parallel: why(after.parallel), dask: why(after.dask), nginx: why(after.nginx) };
}

const SPAWN_LIMIT_C = `
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
extern char **environ;
static const char TASK_JSON[] = "{\\"executable\\":\\"/bin/true\\"}";
/* Lays out task i's sandbox as pilotfish does (DIR/i/ with task.json) and sets its stdout and
   stderr to DIR/i/stdout and DIR/i/stderr (made by the spawned child, before exec). */
static int sandbox(const char *dir, long i, posix_spawn_file_actions_t *fa) {
  char path[4096], file[4200];
  snprintf(path, sizeof path, "%s/%ld", dir, i);
  if (mkdir(path, 0755) != 0) { perror("mkdir"); return -1; }
  snprintf(file, sizeof file, "%s/task.json", path);
  int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, TASK_JSON, sizeof TASK_JSON - 1) < 0 || close(fd) != 0) {
    perror("task.json");
    return -1;
  }
  snprintf(file, sizeof file, "%s/stdout", path);
  posix_spawn_file_actions_addopen(fa, 1, file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  snprintf(file, sizeof file, "%s/stderr", path);
  posix_spawn_file_actions_addopen(fa, 2, file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  return 0;
}
/* spawn-limit N PAR [DIR]: runs N /bin/true, PAR at a time (posix_spawn + waitpid), each in a
   sandbox under DIR when given; prints "N FAILED SECONDS", first spawn to last reap. */
int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) { fprintf(stderr, "usage: spawn-limit N PAR [DIR]\\n"); return 2; }
  long n = atol(argv[1]);
  int par = atoi(argv[2]);
  const char *dir = argc == 4 ? argv[3] : NULL;
  char *args[] = {"/bin/true", NULL};
  long started = 0, done = 0, failed = 0;
  int running = 0;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  while (done < n) {
    while (running < par && started < n) {
      pid_t pid;
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      if (dir != NULL && sandbox(dir, started, &fa) != 0) return 1;
      int rc = posix_spawn(&pid, "/bin/true", &fa, NULL, args, environ);
      posix_spawn_file_actions_destroy(&fa);
      if (rc != 0) { fprintf(stderr, "posix_spawn: %s\\n", strerror(rc)); return 1; }
      started++;
      running++;
    }
    int st;
    if (waitpid(-1, &st, 0) < 0) { perror("waitpid"); return 1; }
    running--;
    done++;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%ld %ld %.9f\\n", n, failed, (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
  return failed == 0 ? 0 : 3;
}
`;

/** Compiles the C helper into `dir`; returns its path, or why it could not. */
async function compileSpawnLimit(dir: string): Promise<{ exe: string } | { reason: string }> {
  const cc = which('cc') ?? which('gcc') ?? which('clang');
  if (cc === undefined) return { reason: 'no C compiler (cc, gcc, clang) on PATH' };
  const src = path.join(dir, 'spawn-limit.c');
  const exe = path.join(dir, 'spawn-limit');
  fs.writeFileSync(src, SPAWN_LIMIT_C);
  const r = await runProcess(cc, ['-O2', '-o', exe, src], { timeoutMs: 60_000 });
  if (r.code !== 0) return { reason: `${cc} failed: ${describeExit(r)}` };
  return { exe };
}

function lines(n: number): string {
  let s = '';
  for (let i = 1; i <= n; i++) s += `${i}\n`;
  return s;
}

/**
 * The machine's limit for this workload: N `/bin/true`, `par` at a time, by the C helper
 * (median of `runs`), or by `xargs -P par` when there is no C compiler. With `sandboxes`, each
 * task gets the files pilotfish gives it (a directory, `task.json`, `stdout`, `stderr`): the
 * limit for the same work on this filesystem (C helper only).
 */
export async function spawnLimit(
  n: number,
  par: number,
  runs: number,
  { sandboxes = false }: { sandboxes?: boolean } = {},
): Promise<Reference> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-spawn-'));
  try {
    const compiled = await compileSpawnLimit(dir);
    const rates: number[] = [];
    if ('exe' in compiled) {
      for (let i = 0; i < runs; i++) {
        const args = [String(n), String(par)];
        const box = path.join(dir, `sandboxes.${i}`);
        if (sandboxes) {
          fs.mkdirSync(box);
          args.push(box);
        }
        const r = await runProcess(compiled.exe, args, { timeoutMs: 600_000 });
        if (sandboxes) removeTree(box);
        if (r.code !== 0) return { ok: false, reason: `spawn-limit helper: ${describeExit(r)}` };
        const [, , secs] = r.stdout.trim().split(/\s+/).map(Number);
        if (secs === undefined || !(secs > 0)) {
          return { ok: false, reason: `spawn-limit helper printed '${r.stdout.trim()}'` };
        }
        rates.push(n / secs);
      }
      return {
        ok: true,
        tasksPerS: median(rates),
        context: {
          helper: 'c-posix_spawn',
          ...(sandboxes ? { files: 'dir, task.json, stdout, stderr per task' } : {}),
          concurrency: par,
          runs,
          ...minMax(rates),
        },
      };
    }
    if (sandboxes) return { ok: false, reason: compiled.reason };
    const xargs = which('xargs');
    if (xargs === undefined) {
      return { ok: false, reason: `${compiled.reason}, and no xargs for the shell fallback` };
    }
    for (let i = 0; i < runs; i++) {
      const r = await runProcess(xargs, ['-P', String(par), '-I{}', '/bin/true'], {
        input: lines(n),
        timeoutMs: 600_000,
      });
      if (r.code !== 0) return { ok: false, reason: `xargs: ${describeExit(r)}` };
      rates.push(n / r.secs);
    }
    return {
      ok: true,
      tasksPerS: median(rates),
      context: {
        helper: 'xargs',
        helper_why: compiled.reason,
        concurrency: par,
        runs,
        ...minMax(rates),
      },
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function minMax(rates: readonly number[]): Record<string, number> {
  return rates.length < 2 ? {} : { min: sig(Math.min(...rates)), max: sig(Math.max(...rates)) };
}

/** GNU parallel, `-j par`, N times `/bin/true` (no arguments: `-N0`), start to exit. */
export async function gnuParallel(n: number, par: number): Promise<Reference> {
  const exe = which('parallel');
  if (exe === undefined) return { ok: false, reason: "GNU parallel is not installed ('parallel')" };
  const v = await runProcess(exe, ['--version'], { timeoutMs: 60_000 });
  const version = v.stdout.split('\n')[0]?.trim() ?? 'unknown';
  if (!version.startsWith('GNU parallel')) {
    return { ok: false, reason: `'${exe}' is not GNU parallel (it says '${version}')` };
  }
  const r = await runProcess(exe, ['--will-cite', '-N0', '-j', String(par), '/bin/true'], {
    input: lines(n),
    timeoutMs: 600_000,
  });
  if (r.code !== 0) return { ok: false, reason: `parallel: ${describeExit(r)}` };
  return {
    ok: true,
    tasksPerS: n / r.secs,
    context: { version, jobs: par, seconds: sig(r.secs), timed: 'process start to exit' },
  };
}

const DASK_PY = `
import json, subprocess, sys, time

def run_true(_i):
    return subprocess.run(['/bin/true']).returncode

def main():
    n, workers, warmup = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    import distributed
    from distributed import Client, LocalCluster
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    client.wait_for_workers(workers)
    start_s = time.perf_counter() - t0
    if warmup > 0:
        client.gather(client.map(run_true, range(warmup), pure=False))
    t1 = time.perf_counter()
    codes = client.gather(client.map(run_true, range(n), pure=False))
    secs = time.perf_counter() - t1
    failed = sum(1 for c in codes if c != 0)
    client.close()
    cluster.close()
    print(json.dumps({'n': len(codes), 'failed': failed, 'secs': secs,
                      'cluster_start_s': start_s, 'version': distributed.__version__}))

if __name__ == '__main__':
    main()
`;

/**
 * Runs a Dask script (`source`) with Debian's python3 in a temp dir (Dask workers write scratch
 * space into their cwd) and parses the JSON its last stdout line holds; a failed run gives the
 * reason instead (exit code or signal and the end of its stderr).
 */
export async function runDaskScript<T>(
  source: string,
  args: readonly (string | number)[],
  timeoutMs: number,
): Promise<{ ok: true; result: T } | { ok: false; reason: string }> {
  if (!fs.existsSync(DEBIAN_PYTHON)) return { ok: false, reason: `${DEBIAN_PYTHON} not found` };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-dask-'));
  try {
    const script = path.join(dir, 'bench.py');
    fs.writeFileSync(script, source);
    const r = await runProcess(DEBIAN_PYTHON, [script, ...args.map(String)], {
      timeoutMs,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
      cwd: dir,
    });
    if (r.code !== 0) return { ok: false, reason: `Dask run: ${describeExit(r)}` };
    return { ok: true, result: JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as T };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Dask distributed: LocalCluster of `workers` single-threaded worker processes, N tasks of
 * `subprocess.run(['/bin/true'])` via client.map + gather; timed from the first submit to the
 * last result, after `warmup` tasks (the pilot has run tasks before exec_tasks_per_s too).
 */
export async function dask(n: number, workers: number): Promise<Reference> {
  const warmup = workers * 4;
  const run = await runDaskScript<{
    n: number;
    failed: number;
    secs: number;
    cluster_start_s: number;
    version: string;
  }>(DASK_PY, [n, workers, warmup], 600_000);
  if (!run.ok) return run;
  const res = run.result;
  if (res.n !== n || res.failed !== 0) {
    return { ok: false, reason: `Dask run: ${res.failed} of ${res.n} tasks failed` };
  }
  return {
    ok: true,
    tasksPerS: n / res.secs,
    context: {
      version: `distributed ${res.version}`,
      workers,
      threads_per_worker: 1,
      warmup_tasks: warmup,
      seconds: sig(res.secs),
      cluster_start_ms: sig(res.cluster_start_s * 1000),
      timed: 'first client.map to last gather result',
    },
  };
}
