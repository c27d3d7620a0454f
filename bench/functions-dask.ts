/**
 * The Dask peer of the `functions` benchmark (bench/functions.ts), with e2e's Dask machinery
 * (bench/references.ts): Debian's /usr/bin/python3 and python3-distributed, a LocalCluster of
 * `workers` single-threaded worker processes. After `workers * 4` warm-up calls: `alone` calls
 * of a no-op function one at a time (`client.submit(...).result()`), then `n` at once
 * (`client.map`, then `client.gather`), timed from the map to the last result.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEBIAN_PYTHON, runProcess } from './references';

const DASK_FUNCTIONS_PY = `
import json, sys, time

def noop(x):
    return None

def main():
    n, workers, warmup, alone = (int(a) for a in sys.argv[1:5])
    import distributed
    from distributed import Client, LocalCluster
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    client.wait_for_workers(workers)
    out = {'version': distributed.__version__, 'cluster_start_s': time.perf_counter() - t0}
    client.gather(client.map(noop, range(warmup), pure=False))
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
export async function daskFunctions(opts: {
  n: number;
  workers: number;
  alone: number;
}): Promise<{ ok: true; result: DaskFunctions } | { ok: false; reason: string }> {
  if (!fs.existsSync(DEBIAN_PYTHON)) return { ok: false, reason: `${DEBIAN_PYTHON} not found` };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-dask-fn-'));
  try {
    const script = path.join(dir, 'dask_functions.py');
    fs.writeFileSync(script, DASK_FUNCTIONS_PY);
    const args = [script, opts.n, opts.workers, opts.workers * 4, opts.alone].map(String);
    // run from the temp dir: Dask workers write scratch space (dask-worker-space) into cwd
    const r = await runProcess(DEBIAN_PYTHON, args, {
      timeoutMs: 1_200_000,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
      cwd: dir,
    });
    if (r.code !== 0) {
      const how = r.signal !== null ? `signal ${r.signal}` : `exit ${r.code}`;
      const tail = r.stderr.trim().split('\n').slice(-3).join(' | ');
      return { ok: false, reason: `Dask run: ${how}${tail === '' ? '' : `: ${tail}`}` };
    }
    return {
      ok: true,
      result: JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as DaskFunctions,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
