import type { TaskRecord } from '../generated';
import type { LauncherLimit } from '../components/agent-scheduler/launchers';
import { needsLauncher } from '../components/executor/launch';

/** What of a pilot decides where its tasks start (a SimPilot is one). */
export interface PilotLayout {
  nodes: readonly { name: string }[];
  launchers?: number | undefined;
  subAgents?: 'none' | 'per-node' | undefined;
}

/**
 * What starting a task costs, in virtual milliseconds, by who pays it. Without it (the default)
 * a task starts the instant the AgentScheduler places it; with it, the start rate depends on
 * the pilot's layout (`subAgents`), as on a real allocation.
 */
export interface LaunchCosts {
  /**
   * The pilot's agent, per task: every task passes through its one event loop (placing it,
   * sending it on, taking its exit), one after the other. Default {@link DEFAULT_LAUNCH_COSTS}.
   */
  agentMs?: number;
  /**
   * Whoever forks a one-rank task on its node, per task, one after the other on that node and in
   * parallel across nodes: the node's sub-agent (subAgents 'per-node'), or the agent's own
   * spawner helpers on the agent's node.
   */
  spawnMs?: number;
  /**
   * A task through a launcher process (srun, mpirun: several ranks, or one rank off the agent's
   * node without a sub-agent there), per launch: in parallel, but each holds one of the pilot's
   * `launchers` (agent.launchers) from its launch to its end, so they start at most
   * launchers / (launchMs + duration) per second.
   */
  launchMs?: number;
}

/**
 * The costs used where a cost is not given: about those `npm run bench -- scale` measured on the
 * lab Slurm cluster, 2026-12-07 (8 nodes of 2 CPUs on one 2-core machine, under load:
 * docs/performance.md, 'scale'); the bench passes the ones of its own run.
 */
export const DEFAULT_LAUNCH_COSTS: Required<LaunchCosts> = {
  agentMs: 2,
  spawnMs: 2.2,
  launchMs: 550,
};

/**
 * Which placed tasks start a launcher on pilot `p`, as its agent decides it (launcherNeed in the
 * agent: needsLauncher with its allocation): a task of several ranks always; on a pilot of
 * several nodes (its agent on the first) a one-rank task off the agent's node, unless per-node
 * sub-agents fork it there.
 */
export function launcherNeed(p: PilotLayout): (t: TaskRecord) => boolean {
  if (p.nodes.length <= 1) return (t) => needsLauncher(t);
  const alloc = {
    agentNode: { name: p.nodes[0]!.name },
    ...(p.subAgents === 'per-node' ? { subAgentNodes: new Set(p.nodes.map((n) => n.name)) } : {}),
  };
  return (t) => needsLauncher(t, alloc);
}

/** The pilot's cap on launcher tasks, as its agent applies it. */
export function launcherLimit(p: PilotLayout): LauncherLimit {
  return { max: p.launchers, needs: launcherNeed(p) };
}

/**
 * When placed tasks start, under {@link LaunchCosts}: a queue for the agent, one per node for
 * the forks there, and none for launches (the AgentScheduler's launcher cap already holds them
 * back). A task placed at `now` is taken by the agent when it is free, then forked by its node
 * when that is free (a follow-on not before the task it follows ends), or launched. Pure: the
 * simulation calls it in the order the AgentScheduler places tasks.
 */
export class LaunchModel {
  readonly costs: Required<LaunchCosts>;
  private agentFree = 0;
  private readonly nodeFree: Float64Array;
  private readonly nodeIndex = new Map<string, number>();
  private readonly needs: (t: TaskRecord) => boolean;

  constructor(p: PilotLayout, costs: LaunchCosts) {
    this.costs = { ...DEFAULT_LAUNCH_COSTS, ...definedOnly(costs) };
    for (const [k, v] of Object.entries(this.costs)) {
      if (!Number.isFinite(v) || v < 0) {
        throw new RangeError(`launch cost ${k} must be a finite number of ms >= 0, not ${v}`);
      }
    }
    p.nodes.forEach((n, i) => this.nodeIndex.set(n.name, i));
    this.nodeFree = new Float64Array(p.nodes.length);
    this.needs = launcherNeed(p);
  }

  /**
   * When placed task `t` (its slots set) starts its command: placed at `now`, not before
   * `notBefore` (the end of the task a follow-on follows; else `now`).
   */
  startAt(t: TaskRecord, now: number, notBefore: number): number {
    this.agentFree = Math.max(this.agentFree, now) + this.costs.agentMs;
    const ready = Math.max(this.agentFree, notBefore);
    if (this.needs(t)) return ready + this.costs.launchMs;
    const n = this.nodeIndex.get(t.slots?.[0]?.node ?? '') ?? 0;
    const start = Math.max(this.nodeFree[n]!, ready) + this.costs.spawnMs;
    this.nodeFree[n] = start;
    return start;
  }
}

function definedOnly(c: LaunchCosts): LaunchCosts {
  return Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined));
}
