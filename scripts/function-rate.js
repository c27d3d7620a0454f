// Measures no-op function calls/s through FunctionPool (warm Node workers).
//
//   npm run build && node scripts/function-rate.js [--n 200000] [--workers 2] [--bulk 64]
//       [--rounds 3] [--env 6] [--cwd DIR] [--language node|python] [--python PATH]
//
// Keeps `bulk` calls in flight per worker (each finished bulk sends the next one to that
// worker); --bulk 1 is the slot model (one call per worker at a time, as the Executor runs
// them). Each call carries `--env` PF_* variables (set and restored per call, as a task's) and,
// with --cwd, a working directory. Times n calls after a warm-up of n/10; prints one JSON line
// per round on stdout, with the CPU time per call of this process (the pool: encode calls,
// decode results) and of the workers (from /proc). --language python measures the Python
// workers (a no-op Python function; the interpreter needs msgpack). A measurement, not a test.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const dist = path.resolve(__dirname, '../dist/src/components/executor/functions/function-pool.js');
if (!fs.existsSync(dist)) {
  process.stderr.write(`function-rate: ${dist} not found: run 'npm run build' first\n`);
  process.exit(2);
}
const { FunctionPool } = require(dist);

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const N = Number(option('n', '200000'));
const WORKERS = Number(option('workers', '2'));
const BULK = Number(option('bulk', '64'));
const ROUNDS = Number(option('rounds', '3'));
const ENV = Number(option('env', '6'));
const CWD = option('cwd', undefined);
const LANGUAGE = option('language', 'node');
const PYTHON = option('python', 'python3');

const logger = {
  error: (m, meta) => process.stderr.write(`error ${m} ${JSON.stringify(meta ?? {})}\n`),
  warn: (m, meta) => process.stderr.write(`warn ${m} ${JSON.stringify(meta ?? {})}\n`),
  info: () => undefined,
  debug: () => undefined,
  child: () => logger,
};

/** user + system CPU seconds of a process, from /proc (clock ticks of 1/100 s). */
function cpuOf(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-frate-'));
  const python = LANGUAGE === 'python';
  const mod = path.join(dir, python ? 'noop.py' : 'noop.js');
  fs.writeFileSync(
    mod,
    python ? 'def noop():\n    return None\n' : 'module.exports = () => null;\n',
  );
  let serial = 0;
  let round; // { left, done, resolve }
  const pool = await FunctionPool.start({
    workers: WORKERS,
    ...(python ? { language: 'python', python: PYTHON } : {}),
    logger,
    logDir: dir,
    killGraceMs: 2000,
    handlers: {
      started: () => undefined,
      failed: (evs) => {
        throw new Error(`call lost: ${JSON.stringify(evs[0])}`);
      },
      finished: (evs) => {
        const perWorker = new Map();
        for (const e of evs) {
          if (!e.ok) throw new Error(`call failed: ${JSON.stringify(e.error)}`);
          const w = Number(e.uid.slice(0, e.uid.indexOf('.')));
          perWorker.set(w, (perWorker.get(w) ?? 0) + 1);
        }
        round.done += evs.length;
        for (const [w, k] of perWorker) send(w, k);
        if (round.done >= round.n) round.resolve();
      },
    },
  });

  function job(w) {
    const uid = `${w}.${++serial}`;
    const env = {};
    for (let i = 0; i < ENV; i++) env[`PF_VAR_${i}`] = i === 0 ? uid : `value-${i}`;
    const j = { uid, module: mod, args: [], env, worker: w };
    if (python) j.export = 'noop';
    if (CWD !== undefined) j.cwd = CWD;
    return j;
  }

  function send(w, k) {
    const jobs = [];
    for (let i = 0; i < k && round.left > 0; i++, round.left--) jobs.push(job(w));
    if (jobs.length > 0) pool.call(jobs);
  }

  function pass(n) {
    return new Promise((resolve) => {
      round = { n, left: n, done: 0, resolve };
      for (let w = 0; w < WORKERS; w++) send(w, BULK);
    });
  }

  try {
    await pass(Math.max(1000, Math.floor(N / 10)));
    for (let r = 0; r < ROUNDS; r++) {
      const pids = pool.pids();
      const w0 = pids.reduce((s, p) => s + cpuOf(p), 0);
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      await pass(N);
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      const c = process.cpuUsage(c0);
      const w = pids.reduce((sum, p) => sum + cpuOf(p), 0) - w0;
      process.stdout.write(
        JSON.stringify({
          metric: 'function_calls_per_s',
          value: Math.round(N / s),
          workers: WORKERS,
          language: LANGUAGE,
          bulk: BULK,
          env: ENV,
          cwd: CWD !== undefined,
          n: N,
          pool_cpu_us_per_call: Number(((c.user + c.system) / N).toFixed(2)),
          workers_cpu_us_per_call: Number(((w * 1e6) / N).toFixed(2)),
          cores: os.cpus().length,
          load_1m: Number(os.loadavg()[0].toFixed(2)),
        }) + '\n',
      );
    }
  } finally {
    await pool.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`function-rate: ${e.stack ?? e}\n`);
  process.exit(1);
});
