/**
 * The whole path on a local pilot with every core, store and callbacks included, once per
 * output mode (`agent.output`: metrics suffixed `_stream` and `_files`, each line with `output`):
 *
 * - `pilot_startup_ms`: submitPilots to the PMGR_ACTIVE callback (median over a few pilots).
 * - `exec_tasks_per_s`: N no-op `/bin/true` tasks (1 core each) on the fresh pilot, first submit
 *   to the last final callback: a short run, so V8 compiling the hot paths of client and agent
 *   (in the client about 2 s of CPU on this 2-core box, by node --trace-opt) is a large part.
 * - `exec_tasks_per_s_steady`: N more on the same pilot right after, once compiled: the rate a
 *   long run settles at (the `_steady` CPU figures are of that batch too).
 * - `task_latency_ms_p50` / `_p99`: one task at a time on an idle pilot, submit to its DONE
 *   callback.
 * - `profile_complete_fraction`: of those N, the fraction whose every state from NEW to DONE has
 *   its real time in the store, read once the session closed (readProfile; 1 is the only right
 *   answer).
 * - `client_cpu_us_per_task`, `agent_cpu_us_per_task`, `spawner_cpu_us_per_task`: CPU time
 *   (user + system) of the client, the agent and its spawner helpers over the run of N, per
 *   task (bench/process-cpu.ts; the tasks' own CPU is not in it).
 *
 * The same again in the default output mode in a session opened `insecure: 'trusted-network'`
 * (suffixed `_insecure`), and `encryption_tasks_per_s_ratio` (encrypted over insecure): what
 * CurveZMQ costs, measured side by side. And in the default output mode with every task in the
 * pilot's shared sandbox (`workdir: 'pilot'`, suffixed `_shared`; every other session's tasks
 * run in a directory of their own, the default), and `own_dir_tasks_per_s_ratio` (own over
 * shared, first and `_steady` batches): what a directory per task costs. The sessions run in the
 * order stream, shared, files, insecure; PILOTFISH_BENCH_E2E_ORDER (e.g.
 * `insecure,files,shared,stream`) changes it, to tell a mode apart from its place (a later
 * session in the same process runs a little slower).
 *
 * Then, in the same run, after the pilots are gone, the same N `/bin/true` with as many at once
 * as the pilot has cores, by references (bench/references.ts):
 *
 * - `spawn_limit_per_s`: a C `posix_spawn` + `waitpid` loop (or `xargs -P` without a compiler;
 *   see `helper`), the machine's limit for this workload;
 * - `sandbox_spawn_limit_per_s`: the same C loop, each task with the files pilotfish gave every
 *   task before output 'stream' (its sandbox directory, `task.json`, `stdout`, `stderr`): the
 *   limit for that layout on this filesystem, where creating files is far from free (one run);
 * - `gnu_parallel_tasks_per_s`: GNU parallel from Debian, `-j cores`, its start-up included;
 * - `dask_tasks_per_s`: Dask distributed from Debian, one single-threaded worker process per
 *   core, `subprocess.run(['/bin/true'])` per task (cluster start-up in `cluster_start_ms`);
 * - `exec_vs_spawn_limit_<mode>`, `exec_vs_sandbox_spawn_limit_<mode>`,
 *   `exec_vs_gnu_parallel_<mode>`, `exec_vs_dask_<mode>`: each mode's exec_tasks_per_s over each;
 *   `exec_steady_vs_spawn_limit_<mode>`, `exec_steady_vs_sandbox_spawn_limit_<mode>`: the same with
 *   exec_tasks_per_s_steady.
 *
 * A reference that cannot run is skipped: no figure for it (or its ratio), and a line
 * `bench e2e: skipped METRIC: REASON` on stderr. Full runs install the peers first
 * (scripts/bench-deps.sh, as root); quick runs use only what is installed.
 * PILOTFISH_BENCH_PEERS=0 skips the peers (GNU parallel and Dask), e.g. while profiling.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  PilotManager,
  Session,
  TaskManager,
  readProfile,
  type Profile,
  type AgentStartup,
  type TaskDescription,
} from '../src';
import { TASK_STATES } from '../src/states/task-model';
import {
  median,
  nowNs,
  removeTree,
  secondsBetween,
  sig,
  type BenchOptions,
  type Figure,
} from './harness';
import { cpuNow, cpuSince } from './process-cpu';
import { dask, gnuParallel, peersForRun, spawnLimit, type Reference } from './references';

export const name = 'e2e';
export const description =
  'local pilot: start-up, /bin/true tasks per second and one-task latency, store and callbacks included';

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const n = quick ? 200 : 5_000;
  const results = new Map<Session3, RunResult>();
  for (const which of sessionOrder()) {
    const output = which === 'insecure' || which === 'shared' ? DEFAULT_OUTPUT : which;
    const task = which === 'shared' ? SHARED_WORKDIR : {};
    results.set(which, await runPilot(quick, n, emit, { output, suffix: `_${which}`, task }));
  }
  const exec = results.get(DEFAULT_OUTPUT)!;
  const plain = results.get('insecure')!;
  emit({
    metric: 'encryption_tasks_per_s_ratio',
    value: sig(exec.tasksPerS / plain.tasksPerS),
    unit: 'ratio',
    output: DEFAULT_OUTPUT,
    encrypted: sig(exec.tasksPerS),
    insecure: sig(plain.tasksPerS),
  });
  const shared = results.get('shared')!;
  for (const [which, own, other] of [
    ['', exec.tasksPerS, shared.tasksPerS],
    ['_steady', exec.steadyPerS, shared.steadyPerS],
  ] as const) {
    emit({
      metric: `own_dir_tasks_per_s_ratio${which}`,
      value: sig(own / other),
      unit: 'ratio',
      output: DEFAULT_OUTPUT,
      own_dir: sig(own),
      shared_dir: sig(other),
      timed: 'tasks in a directory of their own (the default) over tasks in workdir pilot',
    });
  }
  await runReferences(
    quick,
    n,
    { stream: results.get('stream')!, files: results.get('files')! },
    emit,
  );
}

/** The default of agent.output (PilotDescription): what the insecure session runs. */
const DEFAULT_OUTPUT: Output = 'stream';

type Output = 'stream' | 'files';
type Session3 = Output | 'insecure' | 'shared';

/** What the `_shared` session's tasks add: the pilot's sandbox as their working directory. */
const SHARED_WORKDIR: TaskExtra = { workdir: 'pilot' };
type TaskExtra = Pick<TaskDescription, 'workdir'>;
interface RunResult {
  tasksPerS: number;
  /** The rate of the second N, on the warm agent. */
  steadyPerS: number;
  cores: number;
}

/** The sessions in the order they run (PILOTFISH_BENCH_E2E_ORDER). */
function sessionOrder(): Session3[] {
  const all: Session3[] = ['stream', 'shared', 'files', 'insecure'];
  const env = process.env.PILOTFISH_BENCH_E2E_ORDER;
  if (env === undefined || env === '') return all;
  const order = env.split(',').map((x) => x.trim());
  if (order.length !== all.length || all.some((x) => !order.includes(x))) {
    throw new Error(
      `PILOTFISH_BENCH_E2E_ORDER must name ${all.join(', ')} once each, not '${env}'`,
    );
  }
  return order as Session3[];
}

const log = (line: string): void => void process.stderr.write(`bench e2e: ${line}\n`);

/** The pilotfish figures; returns exec_tasks_per_s and the pilot's cores. */
async function runPilot(
  quick: boolean,
  n: number,
  emitAny: (f: Figure) => void,
  { output, suffix, task }: { output: Output; suffix: string; task: TaskExtra },
): Promise<RunResult> {
  const insecure = suffix === '_insecure';
  const emit = (f: Figure): void => emitAny({ ...f, metric: `${f.metric}${suffix}`, output });
  const latencies = quick ? 10 : 200;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-e2e-'));
  const session = await Session.open(insecure ? { dir, insecure: 'trusted-network' } : { dir });
  let uids: Set<string> | undefined;
  try {
    const pmgr = new PilotManager(session);
    const tmgr = new TaskManager(session);
    const startups: number[] = [];
    const phases: AgentStartup[] = [];
    for (let i = 0; i < (quick ? 1 : 5); i++) {
      const t0 = nowNs();
      const [p] = await pmgr.submitPilots([
        { resource: 'local', runtimeMin: 30, agent: { output } },
      ]);
      await pmgr.waitPilots({ uids: [p!.uid], states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
      startups.push(secondsBetween(t0, nowNs()) * 1000);
      phases.push(p!.startup ?? {});
      if (i > 0) pmgr.cancelPilots([p!.uid]);
    }
    emit({
      metric: 'pilot_startup_ms',
      value: sig(median(startups)),
      unit: 'ms',
      runs: startups.length,
    });
    emitStartupPhases(startups, phases, emit);
    const pilot = pmgr.list()[0]!;
    tmgr.addPilots([pilot]);

    const lat: number[] = [];
    for (let i = 0; i < latencies; i++) {
      const t0 = nowNs();
      const [t] = await tmgr.submitTasks([{ executable: '/bin/true', ...task }]);
      await tmgr.waitTasks({ uids: [t!.uid], timeoutMs: 30_000 });
      lat.push(secondsBetween(t0, nowNs()) * 1000);
    }
    lat.sort((a, b) => a - b);
    const pct = (q: number): number => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))]!;
    emit({ metric: 'task_latency_ms_p50', value: sig(pct(0.5)), unit: 'ms', tasks: lat.length });
    emit({ metric: 'task_latency_ms_p99', value: sig(pct(0.99)), unit: 'ms', tasks: lat.length });

    // the first N on a fresh agent (its JIT warm-up included), then N more on the warm one
    const first = await timedBatch(tmgr, n, task);
    uids = new Set(first.uids);
    emitBatch(emit, first, pilot.cores, '');
    const steady = await timedBatch(tmgr, n, task);
    emitBatch(emit, steady, pilot.cores, '_steady');
    return { tasksPerS: first.tasksPerS, steadyPerS: steady.tasksPerS, cores: pilot.cores };
  } finally {
    await session.close();
    // once closed: the agent's last notifications (held or gathered briefly) are in the store
    if (uids !== undefined) {
      emit({
        metric: 'profile_complete_fraction',
        value: sig(completeProfiles(await readProfile(session.dir), uids)),
        unit: 'ratio',
        tasks: n,
        timed: 'of the N tasks, those whose every state to DONE has its real time in the store',
      });
    }
    removeTree(dir);
  }
}

interface Batch {
  uids: string[];
  tasksPerS: number;
  /** CPU microseconds per task, by role (the spawner helpers are the agent's `other`). */
  cpu: Record<'client' | 'agent' | 'spawner', number>;
}

/** N `/bin/true` submitted at once, first submit to the last final state; all must end DONE. */
async function timedBatch(tmgr: TaskManager, n: number, task: TaskExtra): Promise<Batch> {
  const cpu0 = cpuNow();
  const t0 = nowNs();
  const tasks = await tmgr.submitTasks(
    Array.from({ length: n }, () => ({ executable: '/bin/true', ...task })),
  );
  await tmgr.waitTasks({ uids: tasks.map((t) => t.uid), timeoutMs: 600_000 });
  const secs = secondsBetween(t0, nowNs());
  const cpu = cpuSince(cpu0);
  const failed = tasks.filter((t) => t.state !== 'DONE').length;
  if (failed > 0) throw new Error(`e2e: ${failed} of ${n} tasks did not end DONE`);
  return {
    uids: tasks.map((t) => t.uid),
    tasksPerS: n / secs,
    cpu: { client: cpu.client / n, agent: cpu.agent / n, spawner: cpu.other / n },
  };
}

/** exec_tasks_per_s and the CPU per task of each role, `which` ('' or '_steady') in the name. */
function emitBatch(emit: (f: Figure) => void, b: Batch, cores: number, which: string): void {
  const tasks = b.uids.length;
  const batch = which === '' ? 'the first N on a fresh agent' : 'the next N on the same agent';
  emit({
    metric: `exec_tasks_per_s${which}`,
    value: sig(b.tasksPerS),
    unit: '1/s',
    tasks,
    cores,
    batch,
  });
  // the tasks' own CPU is not counted
  for (const [role, us] of Object.entries(b.cpu)) {
    if (us <= 0) {
      log(`skipped ${role}_cpu_us_per_task${which}: no CPU time measured`);
      continue;
    }
    emit({
      metric: `${role}_cpu_us_per_task${which}`,
      value: sig(us),
      unit: 'us',
      tasks,
      batch,
      timed: 'CPU time (user + system) of the process(es) over the run of N, per task',
    });
  }
}

/** The fraction of `uids` whose profile has every state from NEW to DONE, each with its time. */
function completeProfiles(profile: Profile, uids: ReadonlySet<string>): number {
  const all = TASK_STATES.slice(0, TASK_STATES.indexOf('DONE') + 1);
  let complete = 0;
  for (const t of profile.tasks) {
    if (!uids.has(t.uid)) continue;
    const states = t.attempts.at(-1)?.states.map((s) => s.state) ?? [];
    if (states.length === all.length && states.every((s, i) => s === all[i])) complete++;
  }
  return complete / uids.size;
}

async function runReferences(
  quick: boolean,
  n: number,
  exec: Record<Output, RunResult>,
  emit: (f: Figure) => void,
): Promise<void> {
  const par = exec.stream.cores;
  const skip = (metric: string, reason: string): void => log(`skipped ${metric}: ${reason}`);
  const report = (metric: string, ratio: string, ref: Reference, steady = false): void => {
    if (!ref.ok) {
      skip(metric, ref.reason);
      skip(`${ratio}_*`, `no ${metric}`);
      return;
    }
    emit({ metric, value: sig(ref.tasksPerS), unit: '1/s', tasks: n, ...ref.context });
    for (const output of ['stream', 'files'] as const) {
      const ours = exec[output].tasksPerS;
      emit({
        metric: `${ratio}_${output}`,
        value: sig(ours / ref.tasksPerS),
        unit: 'x',
        tasks: n,
        output,
        exec_tasks_per_s: sig(ours),
        [metric]: sig(ref.tasksPerS),
      });
      if (!steady) continue;
      emit({
        metric: `${ratio.replace('exec_', 'exec_steady_')}_${output}`,
        value: sig(exec[output].steadyPerS / ref.tasksPerS),
        unit: 'x',
        tasks: n,
        output,
        exec_tasks_per_s_steady: sig(exec[output].steadyPerS),
        [metric]: sig(ref.tasksPerS),
      });
    }
  };

  report('spawn_limit_per_s', 'exec_vs_spawn_limit', await spawnLimit(n, par, quick ? 1 : 3), true);
  report(
    'sandbox_spawn_limit_per_s',
    'exec_vs_sandbox_spawn_limit',
    await spawnLimit(n, par, 1, { sandboxes: true }),
    true,
  );

  const peers = await peersForRun(quick, log);
  const notHere = (reason: string): Reference => ({ ok: false, reason });
  report(
    'gnu_parallel_tasks_per_s',
    'exec_vs_gnu_parallel',
    peers.parallel === undefined ? await gnuParallel(n, par) : notHere(peers.parallel),
  );
  report(
    'dask_tasks_per_s',
    'exec_vs_dask',
    peers.dask === undefined ? await dask(n, par) : notHere(peers.dask),
  );
}

/**
 * Where a pilot's start-up goes: each phase of its agent's start (Pilot.startup: when it was
 * done, ms since the agent's process started), as the time the phase took, median over the
 * runs; and what the agent's process does not see (the client's submit and the process's
 * spawn before it, the PMGR_ACTIVE callback after).
 */
function emitStartupPhases(
  startups: readonly number[],
  phases: readonly AgentStartup[],
  emit: (f: Figure) => void,
): void {
  const order = ['process', 'config', 'store', 'resources', 'helpers', 'control', 'ready'] as const;
  for (const [i, phase] of order.entries()) {
    const took = phases.map(
      (p) => (p[order[i]!] ?? NaN) - (i === 0 ? 0 : (p[order[i - 1]!] ?? NaN)),
    );
    const ok = took.filter((x) => Number.isFinite(x));
    if (ok.length === 0) continue;
    emit({
      metric: 'pilot_startup_phase_ms',
      value: sig(median(ok)),
      unit: 'ms',
      phase,
      runs: ok.length,
    });
  }
  const outside = phases.map((p, i) => startups[i]! - (p.ready ?? NaN)).filter(Number.isFinite);
  if (outside.length > 0) {
    emit({
      metric: 'pilot_startup_outside_agent_ms',
      value: sig(median(outside)),
      unit: 'ms',
      runs: outside.length,
    });
  }
}
