/**
 * Function tasks (`mode: 'function'`) on a local pilot with every core, embedded store: N calls
 * of a no-op exported function (default 100,000; `--quick` 500; PILOTFISH_BENCH_FUNCTION_TASKS=N
 * for a run in between) in the pilot's warm workers.
 *
 * Figures:
 * - `function_tasks_per_s`: N calls submitted at once, first submit to the last final callback
 *   (validation, scheduling, staging, the store, every callback included), after a warm-up that
 *   started the workers.
 * - `function_round_trip_ms_p50` / `_p99`: one call at a time (500; 10 when quick), submit to
 *   its DONE callback, on the client's monotonic clock, after 2,000 unmeasured ones (10 when
 *   quick). V8 compiles a path in tiers as it runs it: measured from the start, the p50 falls
 *   from ~1.3 ms over the first 200 calls to a steady ~0.7 ms after ~2,000 (client, agent and
 *   worker each compile their part), so the figure is the steady state, and
 *   `function_round_trip_cold_ms_p50` is the p50 of the first 200 of the unmeasured ones (the
 *   first calls of a fresh session), reported beside it.
 * - `client_cpu_us_per_task`, `agent_cpu_us_per_task`, `workers_cpu_us_per_task`: CPU time
 *   (user + system) of the client, the agent and the function workers over the run of N, per
 *   call (bench/process-cpu.ts): steadier than the rate on a shared box.
 *
 * Peer, in the same run after the pilot is gone: Dask distributed from Debian, a LocalCluster of
 * one single-threaded worker process per core, a no-op Python function: `dask_function_tasks_per_s`
 * (`client.map` of N calls to the last `gather`ed result), `dask_round_trip_ms_p50` / `_p99`
 * (`client.submit(...).result()`, one at a time, after as many unmeasured as ours), and
 * `functions_vs_dask`. Without Dask (quick
 * runs do not install it) or with PILOTFISH_BENCH_PEERS=0: no Dask figure, a `skipped` line on
 * stderr instead.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { TaskDescription } from '../src';
import { daskFunctions } from './functions-dask';
import {
  nowNs,
  percentile,
  secondsBetween,
  sig,
  runAll,
  withLocalPilot,
  type BenchOptions,
  type Figure,
} from './harness';
import { cpuNow, cpuSince } from './process-cpu';
import { peersForRun } from './references';

export const name = 'functions';
export const description =
  'no-op function calls in warm workers on a local pilot: calls per second end to end and round trip, against Dask';

const log = (line: string): void => void process.stderr.write(`bench functions: ${line}\n`);

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const n = callCount(quick);
  const alone = quick ? 10 : 500;
  const warm = quick ? 10 : 2_000;
  const ours = await withLocalPilot('pf-bench-fn-', async ({ tmgr, pilot, session }) => {
    const mod = path.join(session.dir, 'noop.js');
    fs.writeFileSync(mod, 'exports.noop = () => null;\n');
    const calls = (k: number): TaskDescription[] =>
      Array.from({ length: k }, () => ({
        mode: 'function',
        function: { module: mod, export: 'noop' },
      }));
    await runAll('functions', tmgr, calls(pilot.cores * 4)); // starts the workers
    // unmeasured first: V8 compiles the one-call path in tiers as it runs it (see above)
    const cold = await oneAtATime(warm);
    const trips = await oneAtATime(alone);
    const cpu0 = cpuNow();
    const secs = await runAll('functions', tmgr, calls(n));
    const cpu = cpuSince(cpu0);
    return { cores: pilot.cores, trips, cold: cold.slice(0, 200), rate: n / secs, cpu };

    /** `k` calls, each submitted once the last is DONE: their round trips in ms. */
    async function oneAtATime(k: number): Promise<number[]> {
      const ms: number[] = [];
      for (let i = 0; i < k; i++) {
        const t0 = nowNs();
        await runAll('functions', tmgr, calls(1));
        ms.push(secondsBetween(t0, nowNs()) * 1000);
      }
      return ms;
    }
  });
  const context = { tasks: n, cores: ours.cores };
  emit({ metric: 'function_tasks_per_s', value: sig(ours.rate), unit: '1/s', ...context });
  for (const role of ['client', 'agent', 'workers'] as const) {
    // a few hundred calls may take less than one tick (10 ms) of a child: nothing measured
    if (ours.cpu[role] <= 0) {
      log(`skipped ${role}_cpu_us_per_task: no CPU time measured`);
      continue;
    }
    emit({
      metric: `${role}_cpu_us_per_task`,
      value: sig(ours.cpu[role] / n),
      unit: 'us',
      ...context,
      timed: 'CPU time (user + system) of the process(es) over the run of N, per task',
    });
  }
  emit({
    metric: 'function_round_trip_ms_p50',
    value: sig(percentile(ours.trips, 0.5)),
    unit: 'ms',
    calls: alone,
    timed: `submit to DONE callback, one call at a time, after ${warm} unmeasured`,
  });
  emit({
    metric: 'function_round_trip_ms_p99',
    value: sig(percentile(ours.trips, 0.99)),
    unit: 'ms',
    calls: alone,
  });
  emit({
    metric: 'function_round_trip_cold_ms_p50',
    value: sig(percentile(ours.cold, 0.5)),
    unit: 'ms',
    calls: ours.cold.length,
    timed: 'the same, the first calls of the session (compiled while they run)',
  });
  await peer(quick, n, ours.cores, { warm, alone }, ours.rate, emit);
}

/** N calls: 100,000, 500 when quick, or PILOTFISH_BENCH_FUNCTION_TASKS. */
function callCount(quick: boolean): number {
  const env = process.env.PILOTFISH_BENCH_FUNCTION_TASKS;
  if (env === undefined || env === '') return quick ? 500 : 100_000;
  const n = Number(env);
  if (!Number.isInteger(n) || n < 1) {
    throw new Error(`PILOTFISH_BENCH_FUNCTION_TASKS must be a positive integer, not '${env}'`);
  }
  return n;
}

async function peer(
  quick: boolean,
  n: number,
  workers: number,
  singles: { warm: number; alone: number },
  ours: number,
  emit: (f: Figure) => void,
): Promise<void> {
  const skip = (why: string): void => log(`skipped dask figures: ${why}`);
  const peers = await peersForRun(quick, log);
  if (peers.dask !== undefined) return skip(peers.dask);
  const r = await daskFunctions({ n, workers, ...singles });
  if (!r.ok) return skip(r.reason);
  const d = r.result;
  const context = {
    tasks: n,
    workers,
    version: d.version,
    cluster_start_ms: sig(d.cluster_start_s * 1000),
  };
  const rate = n / d.map_s;
  const trips = d.single_s.map((s) => s * 1000);
  emit({ metric: 'dask_function_tasks_per_s', value: sig(rate), unit: '1/s', ...context });
  emit({
    metric: 'dask_round_trip_ms_p50',
    value: sig(percentile(trips, 0.5)),
    unit: 'ms',
    ...context,
  });
  emit({
    metric: 'dask_round_trip_ms_p99',
    value: sig(percentile(trips, 0.99)),
    unit: 'ms',
    ...context,
  });
  emit({ metric: 'functions_vs_dask', value: sig(ours / rate), unit: 'x', tasks: n });
}
