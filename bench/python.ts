/**
 * The Python client's remote functions (python/pilotfish, docs/python.md) against Dask, in one
 * run: `pilotfish serve` (the built CLI, one local pilot of every core, its Python workers on
 * Debian's /usr/bin/python3) and a Python program on the same python3 that decorates a no-op
 * with `@client.remote` (cloudpickle'd by value) and calls it.
 *
 * - `python_remote_calls_per_s` (target ≥ 5,000): `f.map(range(n))`, 20,000 calls (quick:
 *   200), from the map to the last result, after warm-up calls; `python_remote_round_trip_ms_p50`
 *   (and `_p99`): one call at a time, 300 (quick: 10), `f(i)` to its result.
 * - `dask_map_calls_per_s`, `dask_round_trip_ms_p50`: the same no-op through Dask distributed
 *   (Debian's python3-distributed, a LocalCluster of as many single-threaded worker processes
 *   as the pilot has Python workers), `client.map` then `gather`; `python_vs_dask` the ratio.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { daskFunctions } from './functions-dask';
import { percentile, removeTree, sig, type BenchOptions } from './harness';
import { DEBIAN_PYTHON, peersForRun, runProcess } from './references';
import { startService } from './serve';

export const name = 'python';
export const description =
  "remote no-op functions from the Python client through pilotfish serve: calls per second and round trip, against Dask's client.map";

const log = (line: string): void => void process.stderr.write(`bench python: ${line}\n`);

const CLIENT_PY = `
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pilotfish import Client

def main():
    url, token, n, alone, warm = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    c = Client(url, token)

    @c.remote
    def noop(x):
        return None

    noop.map(range(warm))          # the workers warm, the preflight done
    for i in range(min(warm, 20)):
        noop(i)
    single = []
    for i in range(alone):
        t = time.perf_counter()
        noop(i)
        single.append(time.perf_counter() - t)
    t = time.perf_counter()
    out = noop.map(range(n))
    map_s = time.perf_counter() - t
    assert out == [None] * n
    c.close()
    print(json.dumps({"map_s": map_s, "single_s": single}))

main()
`;

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const n = quick ? 200 : 20_000;
  const alone = quick ? 10 : 300;
  const warm = quick ? 20 : 2_000;
  const workers = os.cpus().length;
  if (!fs.existsSync(DEBIAN_PYTHON)) return log(`skipped: ${DEBIAN_PYTHON} not found`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-python-'));
  try {
    const service = await startService(dir, [
      { resource: 'local', agent: { python: DEBIAN_PYTHON } },
    ]);
    let ours: { map_s: number; single_s: number[] };
    try {
      const script = path.join(dir, 'client.py');
      fs.writeFileSync(script, CLIENT_PY);
      const args = [script, pythonDir(), service.url.href.replace(/\/$/, ''), service.token];
      const r = await runProcess(DEBIAN_PYTHON, [...args, String(n), String(alone), String(warm)], {
        timeoutMs: 600_000,
        env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
        cwd: dir,
      });
      if (r.code !== 0) throw new Error(`python: the client failed (${r.code}): ${r.stderr}`);
      ours = JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as typeof ours;
    } finally {
      await service.stop();
    }
    const context = { calls: n, workers, timed: 'from the map to its last result' };
    const rate = n / ours.map_s;
    const trips = ours.single_s.map((s) => s * 1000);
    emit({ metric: 'python_remote_calls_per_s', value: sig(rate), unit: '1/s', ...context });
    for (const [suffix, q] of [
      ['p50', 0.5],
      ['p99', 0.99],
    ] as const) {
      emit({
        metric: `python_remote_round_trip_ms_${suffix}`,
        value: sig(percentile(trips, q)),
        unit: 'ms',
        calls: alone,
        timed: 'one call at a time, f(i) to its result',
      });
    }
    const peers = await peersForRun(quick, log);
    if (peers.dask !== undefined) return log(`skipped dask figures: ${peers.dask}`);
    const d = await daskFunctions({ n, workers, warm: quick ? 10 : 200, alone });
    if (!d.ok) return log(`skipped dask figures: ${d.reason}`);
    const daskRate = n / d.result.map_s;
    const dctx = { calls: n, workers, version: d.result.version };
    emit({ metric: 'dask_map_calls_per_s', value: sig(daskRate), unit: '1/s', ...dctx });
    emit({
      metric: 'dask_round_trip_ms_p50',
      value: sig(
        percentile(
          d.result.single_s.map((s) => s * 1000),
          0.5,
        ),
      ),
      unit: 'ms',
      ...dctx,
    });
    emit({ metric: 'python_vs_dask', value: sig(rate / daskRate), unit: 'x', calls: n });
  } finally {
    removeTree(dir);
  }
}

/** The repository's python/ (the client), from bench/ or from dist/bench/. */
function pythonDir(): string {
  for (const p of [path.resolve(__dirname, '../python'), path.resolve(__dirname, '../../python')]) {
    if (fs.existsSync(path.join(p, 'pilotfish', '__init__.py'))) return p;
  }
  throw new Error('bench python: python/pilotfish not found');
}
