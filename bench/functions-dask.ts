/**
 * The Dask peer of the `functions` benchmark (bench/functions.ts), with e2e's Dask machinery
 * (bench/references.ts): Debian's /usr/bin/python3 and python3-distributed, a LocalCluster of
 * `workers` single-threaded worker processes. After `workers * 4` warm-up calls: `warm` calls
 * of a no-op function one at a time (`client.submit(...).result()`), unmeasured, as pilotfish's
 * are; then `alone` more, measured; then `n` at once (`client.map`, then `client.gather`), timed
 * from the map to the last result.
 */
import { runDaskScript } from './references';

const DASK_FUNCTIONS_PY = `
import json, sys, time

def noop(x):
    return None

def main():
    n, workers, warmup, warm, alone = (int(a) for a in sys.argv[1:6])
    import distributed
    from distributed import Client, LocalCluster
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    client.wait_for_workers(workers)
    out = {'version': distributed.__version__, 'cluster_start_s': time.perf_counter() - t0}
    client.gather(client.map(noop, range(warmup), pure=False))
    for i in range(warm):
        client.submit(noop, i, pure=False).result()
    single = []
    for i in range(alone):
        t = time.perf_counter()
        client.submit(noop, i, pure=False).result()
        single.append(time.perf_counter() - t)
    t = time.perf_counter()
    client.gather(client.map(noop, range(n), pure=False))
    out.update(single_s=single, map_s=time.perf_counter() - t)
    client.close()
    cluster.close()
    print(json.dumps(out))

if __name__ == '__main__':
    main()
`;

export interface DaskFunctions {
  version: string;
  cluster_start_s: number;
  single_s: number[];
  map_s: number;
}

/** Runs the script; a Dask that fails gives the reason instead. */
export function daskFunctions(opts: {
  n: number;
  workers: number;
  warm: number;
  alone: number;
}): Promise<{ ok: true; result: DaskFunctions } | { ok: false; reason: string }> {
  const { n, workers, warm, alone } = opts;
  return runDaskScript<DaskFunctions>(
    DASK_FUNCTIONS_PY,
    [n, workers, workers * 4, warm, alone],
    1_200_000,
  );
}
