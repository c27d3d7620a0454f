/**
 * How well a pilot's cores are used, measured the way the field measures it: a heterogeneous
 * workload of N tasks (default 2,000; `--quick` 40; PILOTFISH_BENCH_UTIL_TASKS=N) of 1 to 4
 * cores and 0.2 to 2 s each (`/bin/sleep`; widths and durations uniform, seeded by
 * PILOTFISH_BENCH_SEED, default 1), all submitted at once to one local pilot of 32 virtual cores
 * (`--quick`: 8 cores, 0.05 to 0.2 s). The session's profile (its store, read after the pilot
 * ended) is accounted by `utilization()` (src/profile/utilization.ts): every core-second between
 * the pilot's job start and its end in one bucket.
 *
 * Figures:
 * - `utilization`: running task commands / all core-seconds of the pilot (RADICAL-Pilot's
 *   measure). Context: every bucket in core-seconds, and their sum's relative error.
 * - `efficiency`: the same, less the core-seconds the pilot could not have used (start-up,
 *   draining, and idle because no waiting task fitted: QCG-PilotJob's efficiency).
 * - `makespan_s`: the pilot's accounted window; `work_core_s`: the workload's declared core-seconds.
 *
 * Reference, in the same run: the same workload through Slurm as a user without a pilot runs
 * it, one `srun --exact -n1 -c W sleep D` step per task inside one allocation of as many CPUs,
 * 32 at a time (`xargs -P`), in a Slurm of its own that this benchmark starts
 * (scripts/slurm-up.sh, one node of 32 CPUs, ports 18817-18818) and stops: `slurm_utilization`
 * (the declared core-seconds over the CPUs times the job's run time, a bound above what the
 * steps' own commands used) and `slurm_makespan_s`, and `utilization_vs_slurm`. Without root or
 * Slurm's packages, or with PILOTFISH_BENCH_PEERS=0: no Slurm figure, a `skipped` line instead.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PilotManager, Session, TaskManager, type TaskDescription } from '../src';
import { readProfile } from '../src/profile/read';
import { BUCKETS, utilization } from '../src/profile/utilization';
import { mulberry32, removeTree, sig, type BenchOptions } from './harness';

export const name = 'utilization';
export const description =
  'core utilization and efficiency of a heterogeneous workload on a 32-core local pilot, against one srun step per task in a Slurm allocation';

interface Job {
  cores: number;
  seconds: number;
}

function workload(n: number, quick: boolean): Job[] {
  const rand = mulberry32(Number(process.env.PILOTFISH_BENCH_SEED ?? 1));
  const [lo, hi] = quick ? [0.05, 0.2] : [0.2, 2];
  return Array.from({ length: n }, () => ({
    cores: 1 + Math.floor(rand() * 4),
    seconds: Math.round((lo + rand() * (hi - lo)) * 1000) / 1000,
  }));
}

export async function run(opts: BenchOptions): Promise<void> {
  const n = opts.quick ? 40 : Number(process.env.PILOTFISH_BENCH_UTIL_TASKS ?? 2_000);
  const cores = opts.quick ? 8 : 32;
  const jobs = workload(n, opts.quick);
  const work = jobs.reduce((s, j) => s + j.cores * j.seconds, 0);
  const context = { tasks: n, pilot_cores: cores, work_core_s: sig(work, 4) };

  const ours = await onPilot(jobs, cores);
  const u = ours.pilots[0]!;
  const buckets = Object.fromEntries(BUCKETS.map((b) => [`${b}_core_s`, sig(u.coreSeconds[b], 4)]));
  const check = { buckets_sum_rel_error: u.check.relError, ...buckets };
  opts.emit({
    metric: 'utilization',
    value: sig(u.utilization ?? 0, 4),
    unit: 'ratio',
    ...context,
    ...check,
  });
  opts.emit({ metric: 'efficiency', value: sig(u.efficiency ?? 0, 4), unit: 'ratio', ...context });
  const makespan = (u.end - u.start) / 1000;
  opts.emit({ metric: 'makespan_s', value: sig(makespan), unit: 's', ...context });

  const skip = opts.quick ? 'quick run (it starts a Slurm of its own)' : slurmSkipReason();
  if (skip !== undefined) {
    process.stderr.write(`bench ${name}: skipped slurm figures: ${skip}\n`);
    return;
  }
  const slurm = withBenchSlurm(cores, (env) => onSlurm(jobs, cores, env));
  const slurmUtil = work / (cores * slurm);
  opts.emit({ metric: 'slurm_utilization', value: sig(slurmUtil, 4), unit: 'ratio', ...context });
  opts.emit({ metric: 'slurm_makespan_s', value: sig(slurm), unit: 's', ...context });
  opts.emit({
    metric: 'utilization_vs_slurm',
    value: sig((u.utilization ?? 0) / slurmUtil),
    unit: 'x',
    ...context,
  });
}

/** Runs the jobs on a local pilot of `cores` virtual cores; the utilization of its profile. */
async function onPilot(jobs: Job[], cores: number): Promise<ReturnType<typeof utilization>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-util-'));
  try {
    const session = await Session.open({ dir });
    try {
      const pmgr = new PilotManager(session);
      const tmgr = new TaskManager(session);
      const [pilot] = await pmgr.submitPilots([{ resource: 'local', cores, runtimeMin: 60 }]);
      tmgr.addPilots([pilot!]);
      const descs: TaskDescription[] = jobs.map((j) => ({
        executable: '/bin/sleep',
        arguments: [String(j.seconds)],
        coresPerRank: j.cores,
      }));
      const tasks = await tmgr.submitTasks(descs);
      await tmgr.waitTasks({ timeoutMs: 3_600_000 });
      const bad = tasks.find((t) => t.state !== 'DONE');
      if (bad !== undefined) throw new Error(`${name}: ${bad.uid} ended ${bad.state}`);
    } finally {
      await session.close(); // ends the pilot: its end closes the accounted window
    }
    return utilization(await readProfile(session.dir));
  } finally {
    removeTree(dir);
  }
}

const LAB = '/tmp/pf-bench-slurm';
const ROOT = path.resolve(__dirname, '../..');

function slurmSkipReason(): string | undefined {
  if (process.env.PILOTFISH_BENCH_PEERS === '0') return 'PILOTFISH_BENCH_PEERS=0';
  if (process.getuid?.() !== 0) return 'starting a Slurm of its own needs root';
  return undefined;
}

/** Starts a Slurm of one node of `cores` CPUs for the benchmark, runs `fn`, stops it. */
function withBenchSlurm<T>(cores: number, fn: (env: NodeJS.ProcessEnv) => T): T {
  const env = {
    ...process.env,
    PILOTFISH_SLURM_LAB: LAB,
    PILOTFISH_SLURM_NODES: '1',
    PILOTFISH_SLURM_CPUS_PER_NODE: String(cores),
    PILOTFISH_SLURM_PORT: '18817',
  };
  const up = spawnSync('bash', [path.join(ROOT, 'scripts/slurm-up.sh')], { env, encoding: 'utf8' });
  if (up.status !== 0) throw new Error(`${name}: slurm-up.sh failed: ${up.stderr}`);
  try {
    return fn({ ...env, SLURM_CONF: `${LAB}/etc/slurm.conf` });
  } finally {
    spawnSync('bash', [path.join(ROOT, 'scripts/slurm-down.sh')], { env, stdio: 'ignore' });
  }
}

/** The jobs as srun steps in one allocation of `cores` CPUs, `cores` at a time: its run time (s). */
function onSlurm(jobs: Job[], cores: number, env: NodeJS.ProcessEnv): number {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-util-slurm-'));
  try {
    fs.writeFileSync(path.join(dir, 'jobs'), jobs.map((j) => `${j.cores} ${j.seconds}\n`).join(''));
    const script = path.join(dir, 'job.sh');
    fs.writeFileSync(
      script,
      [
        '#!/bin/bash',
        't0=$(date +%s.%N)',
        `xargs -P ${cores} -L1 sh -c 'srun --exact -n1 -c "$0" sleep "$1"' < ${dir}/jobs`,
        'echo "$t0 $(date +%s.%N)"',
      ].join('\n') + '\n',
      { mode: 0o700 },
    );
    const out = path.join(dir, 'job.out');
    const r = spawnSync('sbatch', ['--wait', '-N1', `-n${cores}`, '-o', out, '-D', dir, script], {
      env,
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`${name}: sbatch failed: ${r.stderr}`);
    const [t0, t1] = fs.readFileSync(out, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
    if (!(t1! > t0!)) throw new Error(`${name}: no run time in ${out}`);
    return t1! - t0!;
  } finally {
    removeTree(dir);
  }
}
