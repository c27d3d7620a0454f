import * as os from 'node:os';
import type { PilotDescription, TaskDescription, Workload } from '../generated';
import type { NodeResources } from '../components/agent-scheduler/node-state';
import { checkDependencies } from '../client/tasks/dependencies';
import { UsageError } from '../errors';
import { nvidiaGpus } from '../lib/gpus';
import { mulberry32 } from '../lib/prng';
import type { LaunchCosts } from './launch-cost';

/** One pilot as the simulation runs it: its agent's nodes and how long it lives. */
export interface SimPilot {
  uid: string;
  resource: string;
  nodes: NodeResources[];
  /** Virtual milliseconds from its start until its runtime ends it (Infinity: never). */
  runtimeMs: number;
  backfillLimit?: number;
  followOns: boolean;
  /** Its agent.launchers (default 64): tasks started by srun or mpirun that run at once. */
  launchers?: number;
  /** Its agent.subAgents: 'per-node' forks one-rank tasks on every node, no launcher each. */
  subAgents?: 'none' | 'per-node';
  /** What starting a task costs (launch-cost.ts); none: a task starts the instant it is placed. */
  launchCosts?: LaunchCosts;
}

/** What `pilotfish simulate` takes besides the workload file. */
export interface SimulateOptions {
  /** One pilot of `nodes` identical nodes instead of the workload's pilots. */
  nodes?: number;
  cores?: number;
  gpus?: number;
  memMb?: number;
  /** The override pilot's runtime (default: none: it lives until the last task ends). */
  runtimeMin?: number;
  /** Duration of a task that declares no walltimeS. */
  defaultWalltimeS?: number;
  /** Each duration is scaled by 1 ± jitter (uniform, drawn from `seed`); default 0. */
  jitter?: number;
  seed?: number;
  /** The override pilot's agent.subAgents and agent.launchers (else its description's). */
  subAgents?: 'none' | 'per-node';
  launchers?: number;
  /**
   * What starting a task costs on every pilot (launch-cost.ts: a cost not given takes its
   * default). Absent: tasks start the instant they are placed, the layout costs nothing.
   */
  launchCosts?: LaunchCosts;
}

/** The tasks as the simulation runs them: records are made from these, in this order. */
export interface SimTasks {
  uids: string[];
  descriptions: readonly TaskDescription[];
  /** Virtual milliseconds each task runs once started. */
  durationMs: Float64Array;
}

/** Memory of a batch node when the description says none (as the Slurm agent's fallback). */
const BATCH_MEM_MB = 4096;

/** The pilots to simulate: the override of `opts`, else the workload's (default one local). */
export function simPilots(w: Workload, opts: SimulateOptions): SimPilot[] {
  const given = [opts.nodes, opts.cores, opts.gpus, opts.memMb].some((x) => x !== undefined);
  if (given) {
    if (opts.nodes === undefined || opts.cores === undefined) {
      throw new UsageError('--nodes and --cores go together (and --gpus, --mem-mb with them)');
    }
    const pilot: SimPilot = {
      uid: 'pilot.0000',
      resource: 'simulated',
      nodes: nodesOf(opts.nodes, opts.cores, opts.gpus ?? 0, opts.memMb ?? 512_000),
      runtimeMs: opts.runtimeMin !== undefined ? opts.runtimeMin * 60_000 : Infinity,
      followOns: true,
    };
    if (opts.subAgents !== undefined) pilot.subAgents = opts.subAgents;
    if (opts.launchers !== undefined) pilot.launchers = opts.launchers;
    return [withCosts(pilot, opts)];
  }
  if (opts.runtimeMin !== undefined) {
    throw new UsageError('--runtime-min goes with --nodes/--cores (else each pilot has its own)');
  }
  const pilots = w.pilots ?? [{ resource: 'local' as const }];
  return pilots.map((d, i) => withCosts(fromDescription(d, i), opts));
}

function withCosts(p: SimPilot, opts: SimulateOptions): SimPilot {
  if (opts.launchCosts !== undefined) p.launchCosts = opts.launchCosts;
  return p;
}

function fromDescription(d: PilotDescription, i: number): SimPilot {
  const uid = d.uid ?? `pilot.${String(i).padStart(4, '0')}`;
  let nodes: NodeResources[];
  if (d.resource === 'local') {
    // as a real local pilot: what the description says, else this machine's
    const memMb = d.memMb ?? Math.floor(os.totalmem() / 2 ** 20);
    nodes = nodesOf(1, d.cores ?? os.cpus().length, d.gpus ?? nvidiaGpus(), memMb);
  } else if (d.nodes !== undefined) {
    if (d.cores === undefined) {
      throw new UsageError(
        `/pilots/${i}: a ${d.resource} pilot of whole nodes needs 'cores' (per node) to be simulated: ` +
          'a real one asks the batch system (sinfo), the simulator cannot',
      );
    }
    nodes = nodesOf(d.nodes, d.cores, d.gpus ?? 0, d.memMb ?? BATCH_MEM_MB);
  } else {
    // cores in all, placed by the batch system: simulated as one node that holds them
    nodes = nodesOf(1, d.cores ?? 1, d.gpus ?? 0, d.memMb ?? BATCH_MEM_MB);
  }
  const pilot: SimPilot = {
    uid,
    resource: d.resource,
    nodes,
    runtimeMs: (d.runtimeMin ?? 60) * 60_000,
    followOns: d.agent?.followOns ?? true,
  };
  if (d.agent?.backfillLimit !== undefined) pilot.backfillLimit = d.agent.backfillLimit;
  if (d.agent?.launchers !== undefined) pilot.launchers = d.agent.launchers;
  if (d.agent?.subAgents !== undefined) pilot.subAgents = d.agent.subAgents;
  return pilot;
}

/** `n` identical nodes named n0, n1, ... (zero-padded to one width). */
export function nodesOf(n: number, cores: number, gpus: number, memMb: number): NodeResources[] {
  const width = String(n - 1).length;
  const out: NodeResources[] = [];
  for (let i = 0; i < n; i++) {
    out.push({ name: `n${String(i).padStart(width, '0')}`, cores, gpus, memMb });
  }
  return out;
}

/**
 * The tasks' uids (as the TaskManager gives them: a description's own, else task.000000, ...
 * skipping those taken) and durations (walltimeS, else the default; none: a usage error naming
 * the task). Dependencies are checked as at submission (ValidationError with their paths).
 */
export function simTasks(w: Workload, opts: SimulateOptions): SimTasks {
  const descs = w.tasks;
  const taken = new Set<string>();
  for (const d of descs) if (d.uid !== undefined) taken.add(d.uid);
  let generated = 0;
  const uids = descs.map((d) => {
    if (d.uid !== undefined) return d.uid;
    let uid: string;
    do uid = `task.${String(generated++).padStart(6, '0')}`;
    while (taken.has(uid));
    return uid;
  });
  if (descs.some((d) => d.after !== undefined)) checkDependencies(descs, uids, () => undefined);
  const jitter = opts.jitter ?? 0;
  const rng = mulberry32(opts.seed ?? 0);
  const durationMs = new Float64Array(descs.length);
  for (let i = 0; i < descs.length; i++) {
    const d = descs[i]!;
    const s = d.walltimeS ?? opts.defaultWalltimeS;
    if (s === undefined) {
      const name = d.name !== undefined ? ` '${d.name}'` : '';
      throw new UsageError(
        `/tasks/${i} (${uids[i]}${name}) declares no walltimeS: give it one, or --default-walltime SECONDS`,
      );
    }
    const scale = jitter > 0 ? 1 + jitter * (2 * rng() - 1) : 1;
    durationMs[i] = Math.round(s * scale * 1000 * 1000) / 1000; // whole microseconds
  }
  return { uids, descriptions: descs, durationMs };
}
