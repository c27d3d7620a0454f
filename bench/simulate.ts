/**
 * `pilotfish simulate` at scale: 1,000,000 tasks of the seeded mixed workload (`mixed-v1` of
 * bench/mixed-workload.ts, each with a walltimeS of 60 to 599 s) on one virtual pilot of 10,000
 * nodes (56 cores, 8 GPUs, 512,000 MiB each), through the same code as the command
 * (src/simulator: the real ManagerScheduler and AgentScheduler cores on a virtual clock), without
 * a Profile (no --timeline). The workload is built in memory (a 1 M-task JSON file would time
 * the JSON parser and ajv, not the simulator).
 *
 * Figures: `simulate_wall_s` (simulation and summary, process.hrtime; target < 60 s),
 * `simulate_cpu_s` (user + system CPU of that span), `simulate_peak_rss_mb` (the process's peak
 * RSS, workload included; target < 1024), `simulated_makespan_s`, `simulated_utilization`
 * (core-seconds run / held, as src/profile/utilization.ts counts `running`) and
 * `simulated_tasks_per_wall_s`.
 */
import type { Workload } from '../src/generated';
import { summarize, simulate } from '../src/simulator';
import { nowNs, secondsBetween, sig, type BenchOptions } from './harness';
import { mixedDescriptions, NODE, SEED, WORKLOAD } from './mixed-workload';

export const name = 'simulate';
export const description =
  'pilotfish simulate: 1e6 mixed tasks (60-599 s each) on 10,000 virtual nodes ' +
  '(56 cores, 8 GPUs each): wall time, peak RSS, makespan, utilization';

const FULL = { tasks: 1_000_000, nodes: 10_000 };
const QUICK = { tasks: 2_000, nodes: 10 };

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const size = quick ? QUICK : FULL;
  const w: Workload = { tasks: mixedDescriptions(size.tasks, true) };
  const context = { ...size, workload: WORKLOAD, seed: SEED };
  const cpu0 = process.cpuUsage();
  const t0 = nowNs();
  const sim = simulate(w, { nodes: size.nodes, ...NODE });
  const report = summarize(sim);
  const wall = secondsBetween(t0, nowNs());
  const cpu = process.cpuUsage(cpu0);
  const rssMb = process.resourceUsage().maxRSS / 1024;
  if (report.counts.DONE !== size.tasks) {
    throw new Error(`simulate: expected ${size.tasks} DONE, got ${JSON.stringify(report.counts)}`);
  }
  emit({ metric: 'simulate_wall_s', value: sig(wall), unit: 's', ...context });
  emit({
    metric: 'simulate_cpu_s',
    value: sig((cpu.user + cpu.system) / 1e6),
    unit: 's',
    ...context,
  });
  emit({ metric: 'simulate_peak_rss_mb', value: sig(rssMb), unit: 'MiB', ...context });
  emit({ metric: 'simulated_makespan_s', value: sig(report.makespan_s), unit: 's', ...context });
  emit({
    metric: 'simulated_utilization',
    value: sig(report.utilization.core!),
    unit: 'x',
    ...context,
  });
  emit({
    metric: 'simulated_tasks_per_wall_s',
    value: sig(size.tasks / wall),
    unit: '1/s',
    ...context,
  });
  await new Promise((r) => setImmediate(r));
}
