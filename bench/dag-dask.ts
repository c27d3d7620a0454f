/**
 * The Dask peer of the `dag` benchmark (bench/dag.ts), with e2e's Dask machinery
 * (bench/references.ts): Debian's /usr/bin/python3 and python3-distributed, a LocalCluster of
 * `workers` single-threaded worker processes, each task `subprocess.run(['/bin/true'])` taking its
 * predecessor's result as argument. After `workers * 4` warm-up tasks, in one process:
 * - `alone` times, alternated: one task alone, then one chain of `length` alone, each a graph of
 *   its own through `client.get`, timed submit to result; the chains' edges (a dependency's
 *   compute stop to its dependent's compute start) from the workers' task stream;
 * - N independent tasks, then N in chains of `length`, each one graph (`client.get`), timed
 *   from the submit to the last result.
 */
import { runDaskScript } from './references';

const DASK_DAG_PY = `
import json, subprocess, sys, time

def run_true(*_prev):
    return subprocess.run(['/bin/true']).returncode

def chains(prefix, count, length):
    dsk = {}
    for c in range(count):
        for k in range(length):
            dsk[(prefix, c, k)] = (run_true, (prefix, c, k - 1)) if k > 0 else (run_true, c)
    return dsk

def main():
    n, length, workers, warmup, alone = (int(a) for a in sys.argv[1:6])
    import distributed
    from distributed import Client, LocalCluster, get_task_stream
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    client.wait_for_workers(workers)
    out = {'version': distributed.__version__, 'cluster_start_s': time.perf_counter() - t0}
    client.gather(client.map(run_true, range(warmup), pure=False))
    single, chain = [], []
    with get_task_stream(client) as stream:
        for i in range(alone):
            t = time.perf_counter()
            client.get({('one', i): (run_true, i)}, [('one', i)])
            single.append(time.perf_counter() - t)
            t = time.perf_counter()
            client.get(chains(f'alone{i}', 1, length), [(f'alone{i}', 0, length - 1)])
            chain.append(time.perf_counter() - t)
    compute = {}
    for rec in stream.data:
        for ss in rec['startstops']:
            if ss['action'] == 'compute':
                compute[rec['key']] = (ss['start'], ss['stop'])
    edges = []
    for i in range(alone):
        for k in range(1, length):
            a = compute.get(str((f'alone{i}', 0, k - 1)))
            b = compute.get(str((f'alone{i}', 0, k)))
            if a is not None and b is not None:
                edges.append(b[0] - a[1])
    out.update(single_s=single, chain_s=chain, edges_s=edges)
    ind = {('ind', i): (run_true, i) for i in range(n)}
    t = time.perf_counter()
    codes = client.get(ind, list(ind.keys()))
    out['independent_s'] = time.perf_counter() - t
    failed = sum(1 for c in codes if c != 0)
    g = chains('dag', n // length, length)
    t = time.perf_counter()
    codes = client.get(g, list(g.keys()))
    out['dag_s'] = time.perf_counter() - t
    out['failed'] = failed + sum(1 for c in codes if c != 0)
    client.close()
    cluster.close()
    print(json.dumps(out))

if __name__ == '__main__':
    main()
`;

/** What the script prints (seconds). */
export interface DaskDag {
  version: string;
  cluster_start_s: number;
  single_s: number[];
  chain_s: number[];
  edges_s: number[];
  independent_s: number;
  dag_s: number;
  failed: number;
}

/** Runs the script; a Dask that fails, or tasks that fail, give the reason instead. */
export async function daskDag(opts: {
  n: number;
  length: number;
  workers: number;
  alone: number;
}): Promise<{ ok: true; result: DaskDag } | { ok: false; reason: string }> {
  const { n, length, workers, alone } = opts;
  const run = await runDaskScript<DaskDag>(
    DASK_DAG_PY,
    [n, length, workers, workers * 4, alone],
    1_200_000,
  );
  if (!run.ok) return run;
  const result = run.result;
  if (result.failed !== 0) return { ok: false, reason: `Dask run: ${result.failed} tasks failed` };
  if (result.edges_s.length === 0) {
    return { ok: false, reason: 'Dask run: no edge in its task stream' };
  }
  return { ok: true, result };
}
