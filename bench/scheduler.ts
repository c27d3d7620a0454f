/**
 * Decisions per second of the AgentScheduler decision core (src/components/agent-scheduler/core)
 * for a simulated pilot of 1,000 and of 10,000 nodes, on one core: the core is pure and
 * synchronous, so the benchmark just calls it in a loop, without sockets, processes or timers.
 *
 * Pilot: every node has 56 cores, 8 GPUs and 512,000 MiB.
 *
 * Workload (`mixed-v1` of bench/mixed-workload.ts, 100,000 tasks, drawn with a seeded PRNG so every
 * run sees the same one):
 *   50%  1 core
 *   15%  4 cores
 *   10%  1 whole GPU + 8 cores
 *   10%  0.25 GPU + 2 cores (a shared GPU)
 *    5%  2 GPUs + 16 cores + 64 GiB
 *    5%  4 ranks x 14 cores, launch mpirun (may span nodes)
 *    3%  2 cores, tags.colocate 'c<k>' (groups of about 10 tasks)
 *    2%  1 core, priority 10
 *
 * Drive: tasks are submitted in bulks of 1,000 whenever fewer than 1,000 tasks wait, so the pilot
 * saturates and tasks queue (the 1,000-node pilot holds about a tenth of the workload at once);
 * otherwise one running task is released (`onReleased`, one task per call), picked at random.
 * This goes on until every task has run and been released. A decision is a successful
 * allocation (a task forwarded with slots) or a release, so a pass makes 200,000 decisions;
 * its wall time (process.hrtime) includes the driver's small bookkeeping.
 *
 * Figures, per pilot size: `decisions_per_s` and `ns_per_decision` (median of the runs, after a
 * warm-up pass), and `per_decision_growth_1k_to_10k` = ns/decision at 10k nodes over 1k nodes
 * (1.0 = the cost of a decision does not grow with the pilot).
 */
import { AgentSchedulerCore } from '../src/components/agent-scheduler/core';
import type { AgentSchedulerEffects } from '../src/components/agent-scheduler/effects';
import type { Notification, TaskRecord } from '../src/generated';
import type { Clock } from '../src/lib/clock';
import { median, mulberry32, nowNs, sig, type BenchOptions } from './harness';
import { mixedDescriptions, mixedNodes, SEED, WORKLOAD } from './mixed-workload';

export const name = 'scheduler';
export const description =
  'allocations+releases per second of the AgentScheduler core, 1k and 10k nodes ' +
  '(56 cores, 8 GPUs, 512,000 MiB each), mixed workload of 1e5 tasks, one core';

/** The core never waits in this benchmark: time stands still. */
const CLOCK: Clock = { now: () => 0, setTimeout: () => ({ cancel() {} }) };

interface Sizes {
  nodes: readonly [number, number];
  tasks: number;
  bulk: number;
  runs: number;
}

const FULL: Sizes = { nodes: [1_000, 10_000], tasks: 100_000, bulk: 1_000, runs: 3 };
const QUICK: Sizes = { nodes: [10, 100], tasks: 2_000, bulk: 100, runs: 1 };

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const sizes = quick ? QUICK : FULL;
  const context = {
    tasks: sizes.tasks,
    bulk: sizes.bulk,
    release_bulk: 1,
    workload: WORKLOAD,
    seed: SEED,
    runs: sizes.runs,
  };
  pass(sizes.nodes[0], sizes); // warm-up
  const nsPerDecision: number[] = [];
  for (const nodes of sizes.nodes) {
    const samples: Pass[] = [];
    for (let r = 0; r < sizes.runs; r++) samples.push(pass(nodes, sizes));
    const perDecision = samples.map((s) => s.ns / s.decisions);
    const ns = median(perDecision);
    nsPerDecision.push(ns);
    const size = {
      nodes,
      decisions: samples[0]!.decisions,
      peak_queued: Math.max(...samples.map((s) => s.peakQueued)),
    };
    emit({
      metric: 'decisions_per_s',
      value: sig(1e9 / ns),
      unit: '1/s',
      ...size,
      min: sig(1e9 / Math.max(...perDecision)),
      max: sig(1e9 / Math.min(...perDecision)),
      ...context,
    });
    emit({ metric: 'ns_per_decision', value: sig(ns), unit: 'ns', ...size, ...context });
    await new Promise((r) => setImmediate(r)); // let the event loop breathe between sizes
  }
  emit({
    metric: 'per_decision_growth_1k_to_10k',
    value: sig(nsPerDecision[1]! / nsPerDecision[0]!),
    unit: 'x',
    from_nodes: sizes.nodes[0],
    to_nodes: sizes.nodes[1],
    ...context,
  });
}

interface Pass {
  ns: number;
  decisions: number;
  /** Most tasks waiting at once: shows that the pilot saturated. */
  peakQueued: number;
}

/** One pass: a fresh core and a fresh copy of the workload, driven until every task ran. */
export function pass(nNodes: number, sizes: Sizes): Pass {
  const tasks = makeWorkload(sizes.tasks);
  const running: string[] = [];
  let allocations = 0;
  let releases = 0;
  let failed = 0;
  let firstFailure: string | undefined;
  const effects: AgentSchedulerEffects = {
    forward(ts) {
      allocations += ts.length;
      for (const t of ts) running.push(t.uid);
    },
    notify(ns: Notification[]) {
      for (const n of ns) {
        if (n.state !== 'FAILED' && n.state !== 'CANCELED') continue;
        failed++;
        firstFailure ??= `${n.uid} ${n.state}: ${n.detail?.reason?.message ?? '(no reason)'}`;
      }
    },
  };
  const core = new AgentSchedulerCore(effects, CLOCK, mixedNodes(nNodes));
  const rng = mulberry32(SEED ^ nNodes);
  const n = tasks.length;
  let next = 0;
  let peakQueued = 0;

  const start = nowNs();
  while (releases + failed < n) {
    if (next < n && (core.queued < sizes.bulk || running.length === 0)) {
      core.onTasks(tasks.slice(next, next + sizes.bulk));
      next += sizes.bulk;
      if (core.queued > peakQueued) peakQueued = core.queued;
      continue;
    }
    if (running.length === 0) {
      throw new Error(
        `scheduler stuck on ${nNodes} nodes: ${core.queued} tasks wait, none runs ` +
          `(${releases} released, ${failed} failed)`,
      );
    }
    const i = Math.floor(rng() * running.length);
    const uid = running[i]!;
    running[i] = running[running.length - 1]!;
    running.pop();
    core.onReleased([{ uid }]);
    releases++;
  }
  const ns = Number(nowNs() - start);

  if (failed > 0) {
    throw new Error(
      `every task of ${WORKLOAD} fits a node, yet ${failed} ended FAILED or CANCELED on ` +
        `${nNodes} nodes; first: ${firstFailure}`,
    );
  }
  if (allocations !== n || releases !== n) {
    throw new Error(`expected ${n} allocations and releases, got ${allocations} and ${releases}`);
  }
  return { ns, decisions: allocations + releases, peakQueued };
}

/** The same `n` tasks every time (seeded), fresh records each call (the core mutates them). */
function makeWorkload(n: number): TaskRecord[] {
  return mixedDescriptions(n).map((description, i) => ({
    uid: `task.${String(i).padStart(6, '0')}`,
    attempt: 1,
    state: 'AGENT_SCHEDULING_PENDING',
    session: 'bench.scheduler',
    description,
  }));
}
