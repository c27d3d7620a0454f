/**
 * Dependencies (`after`) on a local pilot with every core, embedded store, all in one session:
 * N `/bin/true` tasks (default 10,000; `--quick` 200; PILOTFISH_BENCH_DAG_TASKS=N, a multiple
 * of 10, for a run in between) in chains of 10, task k+1 `after` task k.
 *
 * Timestamps. An edge is a dependency and its dependent. Its times are the `ts` the components
 * gave the two tasks' states (Date.now(): whole milliseconds, one clock, every process runs on
 * this host), read from the closed session's store:
 * - the dependency's end: AGENT_STAGING_OUTPUT_PENDING, set by the agent's Executor when its
 *   spawner helper reported the process's exit;
 * - the dependency's final: DONE, set by the client's ManagerOutputStager, which tells the
 *   ManagerScheduler at once (no store round trip);
 * - the dependent's release: TMGR_STAGING_INPUT_PENDING, set by the ManagerScheduler as it gives
 *   the dependent to the pilot;
 * - the dependent's start: AGENT_EXECUTING, set by the Executor as it hands the task to its
 *   spawner helper (the spawn follows within ~0.1 ms).
 * An edge's latency is end to start, in three legs: back (end to final), release (final to
 * release), forward (release to start). Each is ±1 ms (whole ms at both ends); means are unbiased.
 *
 * Figures:
 * - `edge_latency_ms_p50` / `_p90` / `_mean`: the edges of chains run one at a time on the
 *   idle pilot (50 chains, 450 edges; 3 when quick), so that no other task queues before a
 *   dependent: what an edge costs, not the queue. Context: the legs, and the same legs of an
 *   independent task run alone (its end to DONE; its TMGR_SCHEDULING to AGENT_EXECUTING).
 * - `added_latency_per_edge_ms`: (median submit-to-final time of a chain of 10 alone, minus
 *   that of one independent task alone) / 9, on the client's monotonic clock: what each edge
 *   adds to a chain over an independent task's own time through the pipeline. It includes the
 *   dependent's own run (`run_ms_mean`: AGENT_EXECUTING to its end), which no edge avoids: a
 *   chain of 10 takes one task's time plus 9 of these.
 * - `independent_tasks_per_s` and `dag_tasks_per_s`: N tasks without `after`, and N in chains
 *   (submitted chain after chain), each all at once, first submit to last final; run in the
 *   order independent, chains, chains, independent, so that a drift over the session weighs on
 *   both alike; each the mean of its two runs (`first`, `second`). `dag_vs_independent`.
 * - `edge_latency_loaded_ms_p50` (and `p90`): the edges of those loaded runs. A dependent comes
 *   before later chains' first tasks in the ManagerScheduler's queue (submission order), so it
 *   goes to the pilot as soon as there is room; there it waits behind the pilot's backlog
 *   (what it runs plus as much again, at least 64 cores' worth), as any task does at full
 *   load: the legs in the context tell the queue (forward) from the edge's own cost.
 *
 * Peer, in the same run after the pilot is gone: Dask distributed from Debian, a LocalCluster of
 * one single-threaded worker process per core (as e2e's), each task `subprocess.run(['/bin/true'])`
 * taking its predecessor's result as argument, one graph per chain or per run (`client.get`):
 * `dask_edge_latency_ms_p50` / `_p90` (the dependency's compute stop to the dependent's compute
 * start, from the workers' task stream), `dask_added_latency_per_edge_ms` (same definition as
 * ours), `dask_independent_tasks_per_s` and `dask_dag_tasks_per_s` (one run each, first submit
 * to last result), and `dag_vs_dask` (dag_tasks_per_s over dask_dag_tasks_per_s). Without Dask
 * (quick runs do not install it) or with PILOTFISH_BENCH_PEERS=0: no Dask figure, a `skipped`
 * line on stderr instead.
 */
import type { TaskDescription, TaskManager, TaskState } from '../src';
import { passedStates } from '../src/states/passed';
import { EmbeddedStore } from '../src/updater/embedded/store';
import {
  mean,
  median,
  percentile,
  sig,
  runAll,
  withLocalPilot,
  type BenchOptions,
  type Figure,
} from './harness';
import { daskDag } from './dag-dask';
import { peersForRun } from './references';

export const name = 'dag';
export const description =
  'chains of 10 /bin/true (`after`) on a local pilot: tasks per second and latency per dependency edge, against independent tasks and Dask';

const LENGTH = 10;
const EDGES_PER_CHAIN = LENGTH - 1;

const log = (line: string): void => void process.stderr.write(`bench dag: ${line}\n`);

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const n = taskCount(quick);
  const alone = quick ? 3 : 50;
  let stamps = new Map<string, Stamps>();
  const ours = await withLocalPilot(
    'pf-bench-dag-',
    async ({ tmgr, pilot }) => {
      // warm-up: the pilot has run tasks before anything is timed (as Dask's workers have)
      await runAll('dag', tmgr, independent('warm', pilot.cores * 4));
      const unloaded = await runAlone(tmgr, alone);
      const loaded = await throughput(tmgr, n);
      return { cores: pilot.cores, unloaded, loaded };
    },
    { afterClose: async (dir) => void (stamps = await readStamps(dir)) },
  );
  emitUnloaded(ours.unloaded, alone, stamps, emit);
  emitLoaded(ours.loaded, n, stamps, emit);
  await peer(quick, n, ours.cores, alone, ours.loaded.dagRate, emit);
}

/** N tasks of the loaded runs: 10,000, 200 when quick, or PILOTFISH_BENCH_DAG_TASKS. */
function taskCount(quick: boolean): number {
  const env = process.env.PILOTFISH_BENCH_DAG_TASKS;
  if (env === undefined || env === '') return quick ? 200 : 10_000;
  const n = Number(env);
  if (!Number.isInteger(n) || n < LENGTH || n % LENGTH !== 0) {
    throw new Error(`PILOTFISH_BENCH_DAG_TASKS must be a multiple of ${LENGTH}, not '${env}'`);
  }
  return n;
}

function independent(prefix: string, n: number): TaskDescription[] {
  return Array.from({ length: n }, (_, i) => ({ uid: `${prefix}.${i}`, executable: '/bin/true' }));
}

const uidOf = (prefix: string, chain: number, k: number): string => `${prefix}.${chain}.${k}`;

/** `count` chains, one after another, each task after the one before it. */
function chains(prefix: string, count: number): TaskDescription[] {
  const out: TaskDescription[] = [];
  for (let c = 0; c < count; c++) {
    for (let k = 0; k < LENGTH; k++) {
      const uid = uidOf(prefix, c, k);
      out.push(
        k === 0
          ? { uid, executable: '/bin/true' }
          : { uid, executable: '/bin/true', after: [uidOf(prefix, c, k - 1)] },
      );
    }
  }
  return out;
}

/** Submit-to-final times (ms) of one task alone and of one chain alone, alternated. */
async function runAlone(
  tmgr: TaskManager,
  alone: number,
): Promise<{ singleMs: number[]; chainMs: number[] }> {
  const singleMs: number[] = [];
  const chainMs: number[] = [];
  for (let i = 0; i < alone; i++) {
    singleMs.push((await runAll('dag', tmgr, independent(`one${i}`, 1))) * 1000);
    chainMs.push((await runAll('dag', tmgr, chains(`alone${i}`, 1))) * 1000);
  }
  return { singleMs, chainMs };
}

/**
 * N independent tasks and N in chains, each all at once, in the order independent, chains,
 * chains, independent: a drift over the session (warming up, the load of the box) weighs on
 * both kinds alike. Each kind's rate is the mean of its two runs.
 */
async function throughput(
  tmgr: TaskManager,
  n: number,
): Promise<{ ind: [number, number]; dag: [number, number]; dagRate: number }> {
  const rate = async (descs: TaskDescription[]): Promise<number> =>
    n / (await runAll('dag', tmgr, descs));
  const ind0 = await rate(independent('ind0', n));
  const dag0 = await rate(chains('dag0', n / LENGTH));
  const dag1 = await rate(chains('dag1', n / LENGTH));
  const ind1 = await rate(independent('ind1', n));
  return { ind: [ind0, ind1], dag: [dag0, dag1], dagRate: (dag0 + dag1) / 2 };
}

/** A task's first-attempt states and their ts, as the components notified them. */
type Stamps = Partial<Record<TaskState, number>>;

/**
 * Every task's stamps, from the closed session's store: the client's Task.history cannot serve,
 * since a state delivered after a later one (the agent's notifications reach the store after
 * the client's own DONE) is inferred there, without its ts.
 */
async function readStamps(sessionDir: string): Promise<Map<string, Stamps>> {
  const store = await EmbeddedStore.open(sessionDir);
  try {
    const out = new Map<string, Stamps>();
    for (const note of await store.history()) {
      if (note.kind !== 'task' || note.attempt !== 1) continue;
      let s = out.get(note.uid);
      if (s === undefined) out.set(note.uid, (s = {}));
      s[note.state as TaskState] = note.ts;
      // the quiet states it carries (src/components/shared/quiet-carry.ts)
      for (const [state, ts] of passedStates(note)) s[state as TaskState] = ts;
    }
    return out;
  } finally {
    await store.close();
  }
}

const END: TaskState = 'AGENT_STAGING_OUTPUT_PENDING';
const START: TaskState = 'AGENT_EXECUTING';
const RELEASE: TaskState = 'TMGR_STAGING_INPUT_PENDING';

interface Legs {
  latency: number[];
  back: number[];
  release: number[];
  forward: number[];
  /** Edges with a timestamp missing from the store. */
  missing: number;
}

/** Each edge's latency and legs, for chains named as chains() names them: [prefix, index]. */
function edgeLegs(stamps: Map<string, Stamps>, ids: readonly [string, number][]): Legs {
  const legs: Legs = { latency: [], back: [], release: [], forward: [], missing: 0 };
  for (const [prefix, c] of ids) {
    for (let k = 1; k < LENGTH; k++) {
      const d = stamps.get(uidOf(prefix, c, k - 1)) ?? {};
      const s = stamps.get(uidOf(prefix, c, k)) ?? {};
      const [end, done, rel, start] = [d[END], d.DONE, s[RELEASE], s[START]];
      if (end === undefined || done === undefined || rel === undefined || start === undefined) {
        legs.missing++;
        continue;
      }
      legs.latency.push(start - end);
      legs.back.push(done - end);
      legs.release.push(rel - done);
      legs.forward.push(start - rel);
    }
  }
  if (legs.latency.length === 0) throw new Error('dag: no edge has all its stamps in the store');
  return legs;
}

/** p50 and mean of each leg, as figure context. */
function legContext(legs: Legs): Record<string, number> {
  const out: Record<string, number> = { edges: legs.latency.length, edges_missing: legs.missing };
  for (const k of ['back', 'release', 'forward'] as const) {
    out[`${k}_ms_p50`] = sig(percentile(legs[k], 0.5));
    out[`${k}_ms_mean`] = sig(mean(legs[k]));
  }
  return out;
}

/** Emits a figure that must be positive; one that is not is reported skipped, with why. */
function emitPositive(emit: (f: Figure) => void, f: Figure, why: string): void {
  if (f.value > 0 && Number.isFinite(f.value)) emit(f);
  else log(`skipped ${f.metric}: ${f.value} ${f.unit} is not positive (${why})`);
}

const RESOLUTION = 'below the 1 ms resolution of the timestamps';

function emitUnloaded(
  times: { singleMs: number[]; chainMs: number[] },
  alone: number,
  stamps: Map<string, Stamps>,
  emit: (f: Figure) => void,
): void {
  const legs = edgeLegs(
    stamps,
    Array.from({ length: alone }, (_, i) => [`alone${i}`, 0]),
  );
  // the same legs of independent tasks run alone: exit to DONE; submitted to started
  const own = { back: [] as number[], forward: [] as number[] };
  for (let i = 0; i < alone; i++) {
    const s = stamps.get(`one${i}.0`) ?? {};
    if (s[END] !== undefined && s.DONE !== undefined) own.back.push(s.DONE - s[END]);
    if (s.TMGR_SCHEDULING !== undefined && s[START] !== undefined) {
      own.forward.push(s[START] - s.TMGR_SCHEDULING);
    }
  }
  const context = {
    ...legContext(legs),
    chains: alone,
    length: LENGTH,
    ...(own.back.length > 0 ? { independent_back_ms_mean: sig(mean(own.back)) } : {}),
    ...(own.forward.length > 0 ? { independent_forward_ms_mean: sig(mean(own.forward)) } : {}),
    timed: 'dependency AGENT_STAGING_OUTPUT_PENDING to dependent AGENT_EXECUTING',
  };
  for (const [q, suffix] of [
    [0.5, 'p50'],
    [0.9, 'p90'],
  ] as const) {
    const value = sig(percentile(legs.latency, q));
    emitPositive(
      emit,
      { metric: `edge_latency_ms_${suffix}`, value, unit: 'ms', ...context },
      RESOLUTION,
    );
  }
  const avg = sig(mean(legs.latency));
  emitPositive(
    emit,
    { metric: 'edge_latency_ms_mean', value: avg, unit: 'ms', ...context },
    RESOLUTION,
  );
  const added = (median(times.chainMs) - median(times.singleMs)) / EDGES_PER_CHAIN;
  // a dependent's own run, AGENT_EXECUTING to its exit: part of what each edge adds to a chain
  const runs: number[] = [];
  for (let i = 0; i < alone; i++) {
    for (let k = 1; k < LENGTH; k++) {
      const s = stamps.get(uidOf(`alone${i}`, 0, k)) ?? {};
      if (s[START] !== undefined && s[END] !== undefined) runs.push(s[END] - s[START]);
    }
  }
  emitPositive(
    emit,
    {
      metric: 'added_latency_per_edge_ms',
      value: sig(added),
      unit: 'ms',
      chain_ms_p50: sig(median(times.chainMs)),
      independent_ms_p50: sig(median(times.singleMs)),
      ...(runs.length > 0 ? { run_ms_mean: sig(mean(runs)) } : {}),
      runs: alone,
      timed: '(chain of 10 alone - one task alone) / 9, submit to final',
    },
    'a chain of 10 was no slower than one task',
  );
}

function emitLoaded(
  rates: { ind: [number, number]; dag: [number, number]; dagRate: number },
  n: number,
  stamps: Map<string, Stamps>,
  emit: (f: Figure) => void,
): void {
  const both = (r: [number, number]): Record<string, number> => ({
    first: sig(r[0]),
    second: sig(r[1]),
  });
  const indRate = mean(rates.ind);
  const order = 'independent, dag, dag, independent';
  emit({
    metric: 'independent_tasks_per_s',
    value: sig(indRate),
    unit: '1/s',
    tasks: n,
    ...both(rates.ind),
    order,
  });
  emit({
    metric: 'dag_tasks_per_s',
    value: sig(rates.dagRate),
    unit: '1/s',
    tasks: n,
    chains: n / LENGTH,
    length: LENGTH,
    ...both(rates.dag),
    order,
  });
  emit({
    metric: 'dag_vs_independent',
    value: sig(rates.dagRate / indRate),
    unit: 'x',
    tasks: n,
    order,
  });
  const ids: [string, number][] = [];
  for (const prefix of ['dag0', 'dag1']) for (let c = 0; c < n / LENGTH; c++) ids.push([prefix, c]);
  const legs = edgeLegs(stamps, ids);
  emitPositive(
    emit,
    {
      metric: 'edge_latency_loaded_ms_p50',
      value: sig(percentile(legs.latency, 0.5)),
      unit: 'ms',
      p90: sig(percentile(legs.latency, 0.9)),
      ...legContext(legs),
    },
    RESOLUTION,
  );
}

async function peer(
  quick: boolean,
  n: number,
  workers: number,
  alone: number,
  /** dag_tasks_per_s of this run. */
  ours: number,
  emit: (f: Figure) => void,
): Promise<void> {
  const metrics = [
    'dask_edge_latency_ms_p50',
    'dask_edge_latency_ms_p90',
    'dask_added_latency_per_edge_ms',
    'dask_independent_tasks_per_s',
    'dask_dag_tasks_per_s',
    'dag_vs_dask',
  ];
  const skip = (reason: string): void => {
    for (const m of metrics) log(`skipped ${m}: ${reason}`);
  };
  const peers = await peersForRun(quick, log);
  if (peers.dask !== undefined) return skip(peers.dask);
  const ran = await daskDag({ n, length: LENGTH, workers, alone });
  if (!ran.ok) return skip(ran.reason);
  const res = ran.result;
  const context = {
    version: `distributed ${res.version}`,
    workers,
    threads_per_worker: 1,
    cluster_start_ms: sig(res.cluster_start_s * 1000),
  };
  const edges = res.edges_s.map((s) => s * 1000);
  const timed = 'dependency compute stop to dependent compute start (task stream)';
  for (const [q, suffix] of [
    [0.5, 'p50'],
    [0.9, 'p90'],
  ] as const) {
    emitPositive(
      emit,
      {
        metric: `dask_edge_latency_ms_${suffix}`,
        value: sig(percentile(edges, q)),
        unit: 'ms',
        edges: edges.length,
        mean: sig(mean(edges)),
        timed,
        ...context,
      },
      'Dask started a dependent before its dependency stopped',
    );
  }
  const chainMs = median(res.chain_s) * 1000;
  const singleMs = median(res.single_s) * 1000;
  emitPositive(
    emit,
    {
      metric: 'dask_added_latency_per_edge_ms',
      value: sig((chainMs - singleMs) / EDGES_PER_CHAIN),
      unit: 'ms',
      chain_ms_p50: sig(chainMs),
      independent_ms_p50: sig(singleMs),
      runs: alone,
      ...context,
    },
    'a chain of 10 was no slower than one task',
  );
  const indRate = n / res.independent_s;
  const dagRate = n / res.dag_s;
  emit({
    metric: 'dask_independent_tasks_per_s',
    value: sig(indRate),
    unit: '1/s',
    tasks: n,
    ...context,
  });
  emit({
    metric: 'dask_dag_tasks_per_s',
    value: sig(dagRate),
    unit: '1/s',
    tasks: n,
    chains: n / LENGTH,
    dag_vs_independent: sig(dagRate / indRate),
    timed: 'first submit to last result',
    ...context,
  });
  emit({
    metric: 'dag_vs_dask',
    value: sig(ours / dagRate),
    unit: 'x',
    tasks: n,
    dag_tasks_per_s: sig(ours),
    dask_dag_tasks_per_s: sig(dagRate),
  });
}
