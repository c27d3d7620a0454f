import { describe, expect, it } from '@jest/globals';
import type { PilotDescription, TaskDescription, Workload } from '../../../src/generated';
import {
  DEFAULT_LAUNCH_COSTS,
  LaunchModel,
  simulate,
  summarize,
  taskTimes,
  type LaunchCosts,
  type SimulateOptions,
} from '../../../src/simulator';

const task = (uid: string, walltimeS: number): TaskDescription => ({
  uid,
  executable: '/bin/true',
  walltimeS,
});

/** A Slurm pilot of `nodes` nodes of `cores` cores, with the agent options given. */
const slurm = (
  nodes: number,
  cores: number,
  agent: PilotDescription['agent'] = {},
): PilotDescription => ({ resource: 'slurm', nodes, cores, runtimeMin: 60, agent });

/** uid -> [start_s, end_s] of a simulation. */
function times(w: Workload, opts: SimulateOptions = {}): Record<string, [number, number]> {
  const out: Record<string, [number, number]> = {};
  for (const t of taskTimes(simulate(w, opts))) out[t.uid] = [t.start_s!, t.end_s!];
  return out;
}

const four = ['A', 'B', 'C', 'D'].map((u) => task(u, 1));

describe('the simulator launch-cost model', () => {
  it('forks one after the other on a node and in parallel across nodes with per-node sub-agents', () => {
    // 2 nodes of 2 cores: each node's sub-agent forks its two tasks 0.1 s apart
    const launchCosts: LaunchCosts = { agentMs: 0, spawnMs: 100, launchMs: 1000 };
    const pilots: Workload['pilots'] = [slurm(2, 2, { subAgents: 'per-node' })];
    expect(times({ pilots, tasks: four }, { launchCosts })).toEqual({
      A: [0.1, 1.1],
      B: [0.2, 1.2],
      C: [0.1, 1.1],
      D: [0.2, 1.2],
    });
  });

  it('launches the tasks off the agent node through srun without sub-agents', () => {
    // the agent's node n0 forks A and B; C and D on n1 each pay the launch (1 s), in parallel
    const launchCosts: LaunchCosts = { agentMs: 0, spawnMs: 100, launchMs: 1000 };
    const pilots: Workload['pilots'] = [slurm(2, 2, { subAgents: 'none' })];
    expect(times({ pilots, tasks: four }, { launchCosts })).toEqual({
      A: [0.1, 1.1],
      B: [0.2, 1.2],
      C: [1, 2],
      D: [1, 2],
    });
  });

  it('takes every task through the agent one after the other, whatever its node', () => {
    const launchCosts: LaunchCosts = { agentMs: 250, spawnMs: 0, launchMs: 0 };
    const pilots: Workload['pilots'] = [slurm(2, 2, { subAgents: 'per-node' })];
    const starts = Object.values(times({ pilots, tasks: four }, { launchCosts })).map((t) => t[0]);
    expect(starts.sort()).toEqual([0.25, 0.5, 0.75, 1]);
  });

  it('holds a launcher from the launch to the end: launchers / (launchMs + duration) per second', () => {
    // 3 nodes of 1 core, no sub-agents, 1 launcher, tasks of 1 s, a launch of 0.5 s: the
    // launcher is taken for 1.5 s a task; while it is, the shape waits (the agent scheduler's
    // rule), and as it frees one task goes through srun and one is forked on n0
    const launchCosts: LaunchCosts = { agentMs: 0, spawnMs: 0, launchMs: 500 };
    const pilots: Workload['pilots'] = [slurm(3, 1, { subAgents: 'none', launchers: 1 })];
    const tasks = Array.from({ length: 7 }, (_, i) => task(`T${i}`, 1));
    const sim = simulate({ pilots, tasks }, { launchCosts });
    expect(times({ pilots, tasks }, { launchCosts })).toEqual({
      T0: [0, 1], // n0, forked
      T1: [0.5, 1.5], // srun
      T2: [2, 3], // srun once T1's launcher is back at 1.5
      T3: [1.5, 2.5], // n0
      T4: [3.5, 4.5], // srun once T2's is back at 3
      T5: [3, 4], // n0
      T6: [5, 6], // srun at 4.5
    });
    expect(summarize(sim).makespan_s).toBe(6);
  });

  it('leaves the start times as they were when no costs are given', () => {
    const pilots: Workload['pilots'] = [slurm(2, 2, { subAgents: 'per-node' })];
    expect(times({ pilots, tasks: four })).toEqual({
      A: [0, 1],
      B: [0, 1],
      C: [0, 1],
      D: [0, 1],
    });
  });

  it('frees one-rank tasks on other nodes from the launcher cap with per-node sub-agents', () => {
    // no costs: only the cap. 3 nodes of 1 core, 1 launcher: without sub-agents n1 and n2
    // need one each, so one waits; with them none does
    const tasks = ['A', 'B', 'C'].map((u) => task(u, 10));
    const ends = (subAgents: 'none' | 'per-node') =>
      Object.values(times({ pilots: [slurm(3, 1, { subAgents, launchers: 1 })], tasks }))
        .map((t) => t[1])
        .sort((a, b) => a - b);
    expect(ends('none')).toEqual([10, 10, 20]);
    expect(ends('per-node')).toEqual([10, 10, 10]);
  });
});

describe('LaunchModel', () => {
  const layout = { nodes: [{ name: 'n0' }, { name: 'n1' }], subAgents: 'per-node' as const };
  const placed = (node: string, ranks = 1) => ({
    uid: `t-${node}-${ranks}`,
    attempt: 1,
    state: 'AGENT_EXECUTING' as const,
    session: 's',
    description: { executable: '/bin/true', ranks },
    slots: Array.from({ length: ranks }, (_, i) => ({
      node: i === 0 ? node : 'n1',
      cores: [i],
      gpus: [],
    })),
  });

  it('takes the defaults for costs not given and rejects a negative one, naming it', () => {
    expect(new LaunchModel(layout, { agentMs: 1 }).costs).toEqual({
      ...DEFAULT_LAUNCH_COSTS,
      agentMs: 1,
    });
    expect(() => new LaunchModel(layout, { spawnMs: -1 })).toThrow(
      'launch cost spawnMs must be a finite number of ms >= 0, not -1',
    );
  });

  it('queues at the agent, then at the node; a launch waits only for the agent', () => {
    const m = new LaunchModel(layout, { agentMs: 1, spawnMs: 5, launchMs: 100 });
    expect(m.startAt(placed('n0'), 0, 0)).toBe(6); // agent 0-1, n0 1-6
    expect(m.startAt(placed('n0'), 0, 0)).toBe(11); // agent 1-2, n0 6-11
    expect(m.startAt(placed('n1'), 0, 0)).toBe(8); // agent 2-3, n1 3-8
    expect(m.startAt(placed('n0', 2), 0, 0)).toBe(104); // agent 3-4, then srun 100
    expect(m.startAt(placed('n1'), 50, 60)).toBe(65); // a follow-on: not before 60
  });
});
