/**
 * Tasks per second as a Slurm pilot grows, on the lab cluster (scripts/slurm-up.sh: 8 nodes of
 * 2 CPUs, all on this one machine), and the simulator's figure for the same layout at 10,000
 * nodes.
 *
 * In one run, one pilot at a time: a pilot of k = 1, 2, 4 and 8 nodes with per-node sub-agents
 * (`agent.subAgents: 'per-node'`), then one of 8 nodes without (`'none'`: a one-rank task off
 * the agent's node starts through srun, under agent.launchers). Each gets a warm-up burst (2
 * tasks a core), then a timed burst of one-rank `/bin/sleep 0.1` (100 a core; 4 quick), all
 * submitted at once, first submit to the last final callback. The tasks sleep rather than
 * exit at once so that what grows is the pilot's room to start tasks, not this machine's 2
 * cores: /bin/true on 16 "nodes" of 2 real cores measures the 2 cores.
 *
 * Figures: `scale_tasks_per_s` per k (context `nodes`), `scale_growth` (over the 1-node rate),
 * `scale_tasks_per_s_no_subagents` and `scale_subagents_vs_none` at 8 nodes.
 *
 * The simulator's launch-cost model (src/simulator/launch-cost.ts) is calibrated from the same
 * run: `model_agent_ms_per_task` (the agent process's CPU time per task, 8 nodes, sub-agents),
 * `model_spawn_ms_per_task` (the sub-agents' and their spawner helpers' CPU time per task) and
 * `model_launch_ms` (per srun: the median time an srun task ran, launch to exit, less that of
 * the same task forked on the agent's node, in the 'none' pilot). A cost that could not be
 * measured (a quick run may see no CPU tick) takes its default and is said on stderr. Then
 * `simulated_scale_tasks_per_s` and `simulated_scale_tasks_per_s_no_subagents` (and their ratio
 * `simulated_subagents_vs_none`) at 10,000 nodes of 2 cores (100 quick), 0.1 s tasks, and the
 * same at the lab's 8 nodes (`simulated_lab_*`, to hold the model against what was measured).
 *
 * Without the lab cluster (not started, not root) no figure: a `skipped` line on stderr.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { PilotManager, Session, TaskManager, readProfile, type TaskDescription } from '../src';
import type { Workload } from '../src/generated';
import { DEFAULT_LAUNCH_COSTS, simulate, summarize, type LaunchCosts } from '../src/simulator';
import { median, nowNs, removeTree, secondsBetween, sig, type BenchOptions } from './harness';

export const name = 'scale';
export const description =
  'tasks per second on Slurm pilots of 1, 2, 4, 8 lab nodes (per-node sub-agents, and none at 8), ' +
  'and the simulator at 10,000 nodes calibrated from them';

type Layout = 'per-node' | 'none';

/** The tasks of every burst: one rank, sleeping, so that cores, not this machine, are counted. */
const TASK_S = 0.1;
const TASK: TaskDescription = { executable: '/bin/sleep', arguments: [String(TASK_S)] };
const LAB_NODES = [1, 2, 4, 8] as const;
const SIM = { full: { nodes: 10_000, tasks: 100_000 }, quick: { nodes: 100, tasks: 2_000 } };

const log = (line: string): void => void process.stderr.write(`bench ${name}: ${line}\n`);

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const lab = labSlurm();
  if (typeof lab === 'string') {
    log(`skipped every figure: ${lab}`);
    return;
  }
  const perCore = quick ? 4 : 100;
  const saved = process.env.SLURM_CONF;
  process.env.SLURM_CONF = lab.SLURM_CONF; // the pilot's sbatch and its agent read it
  const runs = new Map<number, LabRun>();
  let none: LabRun;
  try {
    for (const k of LAB_NODES) runs.set(k, await onLab(k, 'per-node', perCore));
    none = await onLab(8, 'none', perCore);
  } finally {
    if (saved === undefined) delete process.env.SLURM_CONF;
    else process.env.SLURM_CONF = saved;
  }
  const one = runs.get(1)!;
  const context = { task: `/bin/sleep ${TASK_S}`, tasks_per_core: perCore };
  for (const [k, r] of runs) {
    const ctx = {
      ...context,
      nodes: k,
      pilot_cores: r.cores,
      tasks: r.tasks,
      subagents: 'per-node',
    };
    emit({ metric: 'scale_tasks_per_s', value: sig(r.perS), unit: '1/s', ...ctx });
    if (k === 1) continue;
    emit({
      metric: 'scale_growth',
      value: sig(r.perS / one.perS),
      unit: 'x',
      ...ctx,
      timed: `tasks per second on ${k} nodes over that on 1 (${sig(one.perS)}/s)`,
    });
  }
  const eight = runs.get(8)!;
  const noneCtx = { ...context, nodes: 8, pilot_cores: none.cores, tasks: none.tasks };
  emit({
    metric: 'scale_tasks_per_s_no_subagents',
    value: sig(none.perS),
    unit: '1/s',
    ...noneCtx,
    subagents: 'none',
  });
  emit({
    metric: 'scale_subagents_vs_none',
    value: sig(eight.perS / none.perS),
    unit: 'x',
    ...noneCtx,
    per_node: sig(eight.perS),
    none: sig(none.perS),
  });

  const costs = calibrate(eight, none, emit);
  const inputs = {
    agent_ms: sig(costs.agentMs),
    spawn_ms: sig(costs.spawnMs),
    launch_ms: sig(costs.launchMs),
    launchers: 64,
    task_s: TASK_S,
    cores_per_node: 2,
  };
  const size = quick ? SIM.quick : SIM.full;
  for (const [prefix, nodes, tasks] of [
    ['simulated_scale', size.nodes, size.tasks],
    ['simulated_lab', 8, none.tasks],
  ] as const) {
    const per = simRate(nodes, tasks, 'per-node', costs);
    const no = simRate(nodes, tasks, 'none', costs);
    const ctx = { ...inputs, nodes, tasks, model: 'src/simulator/launch-cost.ts' };
    emit({ metric: `${prefix}_tasks_per_s`, value: sig(per), unit: '1/s', ...ctx });
    emit({ metric: `${prefix}_tasks_per_s_no_subagents`, value: sig(no), unit: '1/s', ...ctx });
    if (prefix === 'simulated_scale') {
      emit({ metric: 'simulated_subagents_vs_none', value: sig(per / no), unit: 'x', ...ctx });
    }
  }
}

/** `{ SLURM_CONF }` of the lab cluster (as test/support/slurm.ts finds it), else why not. */
function labSlurm(): { SLURM_CONF: string } | string {
  const lab = process.env.PILOTFISH_SLURM_LAB || '/tmp/pilotfish-slurm';
  let text: string;
  try {
    text = fs.readFileSync(path.join(lab, 'env.sh'), 'utf8');
  } catch {
    return `no lab Slurm cluster (${lab}/env.sh missing: run scripts/slurm-up.sh as root)`;
  }
  const conf = /^export SLURM_CONF=(\S+)$/m.exec(text)?.[1];
  if (conf === undefined || !fs.existsSync(conf)) return `${lab}/env.sh names no slurm.conf`;
  const env = { ...process.env, SLURM_CONF: conf };
  const ping = spawnSync('scontrol', ['ping'], { env, encoding: 'utf8', timeout: 5_000 });
  if (ping.status !== 0 || !/is UP/.test(ping.stdout)) {
    return `the lab's slurmctld does not answer (scontrol ping: ${ping.error?.message ?? ping.stdout.trim()})`;
  }
  const sinfo = spawnSync('sinfo', ['-h', '-o', '%D'], { env, encoding: 'utf8', timeout: 5_000 });
  const nodes = Number(sinfo.stdout.trim().split('\n')[0]);
  if (!(nodes >= 8)) return `the lab has ${sinfo.stdout.trim() || 'no'} nodes, 8 are needed`;
  return { SLURM_CONF: conf };
}

interface LabRun {
  tasks: number;
  cores: number;
  perS: number;
  /** CPU microseconds over the timed burst, by role (processes of the pilot, by command). */
  cpu: Record<Role, number>;
  /** Median launch-to-exit of the timed tasks on the agent's node, and off it (ms). */
  holdOn: number | undefined;
  holdOff: number | undefined;
}

/** One pilot of `k` nodes: a warm-up burst, then the timed one; its figures and costs. */
async function onLab(k: number, layout: Layout, perCore: number): Promise<LabRun> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-scale-'));
  try {
    const session = await Session.open({ dir });
    let timed: string[] = [];
    let r: Omit<LabRun, 'holdOn' | 'holdOff'>;
    let agentNode: string;
    try {
      const pmgr = new PilotManager(session);
      const tmgr = new TaskManager(session);
      const [pilot] = await pmgr.submitPilots([
        { resource: 'slurm', nodes: k, runtimeMin: 20, agent: { subAgents: layout } },
      ]);
      await pmgr.waitPilots({ uids: [pilot!.uid], states: ['PMGR_ACTIVE'], timeoutMs: 300_000 });
      tmgr.addPilots([pilot!]);
      const cores = pilot!.cores;
      // the agent runs on the allocation's first node (the batch script's)
      agentNode = pilot!.nodes[0]!.name;
      await burst(tmgr, 2 * cores);
      const n = perCore * cores;
      const cpu0 = pilotCpu(dir);
      const t0 = nowNs();
      timed = await burst(tmgr, n);
      const secs = secondsBetween(t0, nowNs());
      const cpu = cpuDiff(cpu0, pilotCpu(dir));
      r = { tasks: n, cores, perS: n / secs, cpu };
      log(`${k} nodes, sub-agents ${layout}: ${n} tasks in ${sig(secs)} s, CPU ${fmt(cpu)}`);
    } finally {
      await session.close();
    }
    const holds = await holdsByNode(session.dir, new Set(timed), agentNode);
    return { ...r, ...holds };
  } finally {
    removeTree(dir);
  }
}

/** `n` tasks submitted at once; resolves with their uids once all are final (all DONE). */
async function burst(tmgr: TaskManager, n: number): Promise<string[]> {
  const tasks = await tmgr.submitTasks(Array.from({ length: n }, () => TASK));
  await tmgr.waitTasks({ uids: tasks.map((t) => t.uid), timeoutMs: 900_000 });
  const bad = tasks.filter((t) => t.state !== 'DONE');
  if (bad.length > 0) {
    const t = bad[0]!;
    const why = t.reason === undefined ? '' : `, ${t.reason.code}: ${t.reason.message}`;
    throw new Error(
      `${name}: ${bad.length} of ${n} tasks did not end DONE (${t.uid}: ${t.state}${why})`,
    );
  }
  return tasks.map((t) => t.uid);
}

/** Medians of launch-to-exit (ms) of `uids`, on the agent's node and off it, from the store. */
async function holdsByNode(
  sessionDir: string,
  uids: ReadonlySet<string>,
  agentNode: string,
): Promise<{ holdOn: number | undefined; holdOff: number | undefined }> {
  const on: number[] = [];
  const off: number[] = [];
  for (const t of (await readProfile(sessionDir)).tasks) {
    const a = t.attempts.at(-1);
    if (!uids.has(t.uid) || a?.launched === undefined || a.exited === undefined) continue;
    (a.slots?.[0]?.node === agentNode ? on : off).push(a.exited - a.launched);
  }
  return {
    holdOn: on.length > 0 ? median(on) : undefined,
    holdOff: off.length > 0 ? median(off) : undefined,
  };
}

type Role = 'agent' | 'subagents' | 'spawners' | 'other';

/**
 * CPU microseconds so far of each live process of the pilot (those working in the session's
 * directory: the agent, its sub-agents, their spawner helpers), by pid, with its role. The
 * agent runs under slurmd, not under this process, so bench/process-cpu.ts does not see it.
 */
function pilotCpu(sessionDir: string): Map<number, { role: Role; us: number }> {
  const out = new Map<number, { role: Role; us: number }>();
  const roleOfPid = new Map<number, Role>();
  const found: { pid: number; ppid: number; us: number; cmd: string }[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (!fs.readlinkSync(`/proc/${e}/cwd`).startsWith(sessionDir)) continue;
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const us = ((Number(rest[11]) + Number(rest[12])) * 1e6) / 100; // utime + stime, USER_HZ 100
      const cmd = fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').replaceAll('\0', ' ');
      found.push({ pid: Number(e), ppid: Number(rest[1]), us, cmd });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  for (const p of found) {
    if (p.cmd.includes('subagents/main.js')) roleOfPid.set(p.pid, 'subagents');
    else if (p.cmd.includes('agent/main.js')) roleOfPid.set(p.pid, 'agent');
  }
  for (const p of found) {
    let role = roleOfPid.get(p.pid);
    // a sub-agent's spawner helpers fork its node's tasks: they count as its node's cost
    if (role === undefined) {
      role =
        p.cmd.includes('pf-spawner') && roleOfPid.get(p.ppid) === 'subagents'
          ? 'spawners'
          : 'other';
    }
    out.set(p.pid, { role, us: p.us });
  }
  return out;
}

function cpuDiff(
  before: Map<number, { us: number }>,
  after: Map<number, { role: Role; us: number }>,
): Record<Role, number> {
  const out: Record<Role, number> = { agent: 0, subagents: 0, spawners: 0, other: 0 };
  for (const [pid, p] of after) out[p.role] += p.us - (before.get(pid)?.us ?? 0);
  return out;
}

const fmt = (cpu: Record<Role, number>): string =>
  Object.entries(cpu)
    .map(([r, us]) => `${r} ${sig(us / 1000)} ms`)
    .join(', ');

/** The model's costs from the 8-node runs; a cost not measured keeps its default (said). */
function calibrate(
  perNode: LabRun,
  none: LabRun,
  emit: BenchOptions['emit'],
): Required<LaunchCosts> {
  const costs = { ...DEFAULT_LAUNCH_COSTS };
  const measured: [keyof LaunchCosts, string, number | undefined, string][] = [
    [
      'agentMs',
      'model_agent_ms_per_task',
      perNode.cpu.agent / 1000 / perNode.tasks,
      "the agent process's CPU time per task, 8 nodes with sub-agents",
    ],
    [
      'spawnMs',
      'model_spawn_ms_per_task',
      (perNode.cpu.subagents + perNode.cpu.spawners) / 1000 / perNode.tasks,
      "the sub-agents' and their spawner helpers' CPU time per task, 8 nodes",
    ],
    [
      'launchMs',
      'model_launch_ms',
      none.holdOff !== undefined && none.holdOn !== undefined
        ? none.holdOff - none.holdOn
        : undefined,
      "median launch to exit of the srun tasks less the forked ones', 8 nodes without sub-agents",
    ],
  ];
  for (const [key, metric, value, timed] of measured) {
    if (value === undefined || !(value > 0)) {
      log(`skipped ${metric}: not measured in this run; the model takes ${costs[key]} ms`);
      continue;
    }
    costs[key] = value;
    emit({ metric, value: sig(value), unit: 'ms', nodes: 8, timed });
  }
  return costs;
}

/** The simulator's tasks per second: `tasks` of TASK_S on `nodes` nodes of 2 cores. */
function simRate(nodes: number, tasks: number, layout: Layout, costs: LaunchCosts): number {
  const w: Workload = {
    tasks: Array.from({ length: tasks }, () => ({ ...TASK, walltimeS: TASK_S })),
  };
  const sim = simulate(w, { nodes, cores: 2, gpus: 0, subAgents: layout, launchCosts: costs });
  const r = summarize(sim);
  if (r.counts.DONE !== tasks) {
    throw new Error(`${name}: the simulation ended ${JSON.stringify(r.counts)}, not ${tasks} DONE`);
  }
  return tasks / r.makespan_s;
}
