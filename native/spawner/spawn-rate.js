// Measures spawns/s of a trivial task through SpawnerPool, for each spawner helper.
//
//   npm run build && node native/spawner/spawn-rate.js [--n 5000] [--count 2] [--per 4]
//       [--helper native|node|both] [--exe /bin/true] [--rounds 3] [--tracking cgroup|proc]
//
// Keeps count*per tasks in flight (each exit starts the next), as the Executor does, and times
// n exits after a warm-up of n/10. Prints one JSON line per helper and round on stdout, with the
// helpers' own CPU time (user + system, from /proc) per spawn, which a busy box disturbs less
// than the rate. --tracking picks how the helpers track task processes (default: a cgroup per
// task where the machine offers it). A measurement, not a test: nothing here asserts a time.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const dist = path.resolve(__dirname, '../../dist/src/components/executor/spawner-pool.js');
if (!fs.existsSync(dist)) {
  process.stderr.write(`spawn-rate: ${dist} not found: run 'npm run build' first\n`);
  process.exit(2);
}
const { SpawnerPool } = require(dist);

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const N = Number(option('n', '5000'));
const COUNT = Number(option('count', '2'));
const PER = Number(option('per', '4'));
const ROUNDS = Number(option('rounds', '3'));
const EXE = option('exe', '/bin/true');
const which = option('helper', 'both');
const TRACKING = option('tracking', undefined);
const helpers = which === 'both' ? ['native', 'node'] : [which];

const logger = {
  error: (m, meta) => process.stderr.write(`error ${m} ${JSON.stringify(meta ?? {})}\n`),
  warn: (m, meta) => process.stderr.write(`warn ${m} ${JSON.stringify(meta ?? {})}\n`),
  info: () => undefined,
  debug: () => undefined,
  child: () => logger,
};

/** Runs `total` tasks with `inFlight` at a time; resolves with the seconds it took. */
function run(pool, state, total, inFlight, dir) {
  return new Promise((resolve, reject) => {
    let started = 0;
    let done = 0;
    const t0 = process.hrtime.bigint();
    state.onDone = (n, failures) => {
      if (failures.length > 0) {
        reject(new Error(`spawn failed: ${JSON.stringify(failures[0])}`));
        return;
      }
      done += n;
      if (done >= total) {
        resolve(Number(process.hrtime.bigint() - t0) / 1e9);
        return;
      }
      for (let i = 0; i < n && started < total; i++) next();
    };
    const next = () => {
      const uid = `t${state.seq++}`;
      started++;
      pool.spawn({
        uid,
        executable: EXE,
        args: [],
        env: { PF_TASK_ID: uid },
        cwd: dir,
        stdoutPath: '/dev/null',
        stderrPath: '/dev/null',
      });
    };
    for (let i = 0; i < inFlight && started < total; i++) next();
  });
}

/** CPU seconds (user + system) the process has used, from /proc/<pid>/stat. */
function cpuSeconds(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ is 100 on Linux
}

async function measure(helper) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-spawn-rate-'));
  const state = { seq: 0, onDone: () => undefined };
  const pool = await SpawnerPool.start({
    count: COUNT,
    helper,
    logger,
    ...(TRACKING === undefined ? {} : { tracking: TRACKING }),
    handlers: {
      started: () => undefined,
      exited: (evs) => state.onDone(evs.length, []),
      failed: (evs) => state.onDone(evs.length, evs),
    },
  });
  try {
    await run(pool, state, Math.max(1, Math.floor(N / 10)), COUNT * PER, dir); // warm-up
    const helperPids = pool.helpers.map((h) => h.pid);
    const cpu = () => helperPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
    for (let r = 0; r < ROUNDS; r++) {
      const cpu0 = cpu();
      const s = await run(pool, state, N, COUNT * PER, dir);
      const figure = {
        bench: 'spawn-rate',
        helper,
        tracking: pool.tracking,
        helpers: COUNT,
        perHelper: PER,
        n: N,
        executable: EXE,
        seconds: Number(s.toFixed(3)),
        spawnsPerSecond: Math.round(N / s),
        helperCpuUsPerSpawn: Math.round(((cpu() - cpu0) / N) * 1e6),
        cpus: os.cpus().length,
      };
      process.stdout.write(`${JSON.stringify(figure)}\n`);
    }
  } finally {
    await pool.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

(async () => {
  for (const helper of helpers) await measure(helper);
})().catch((e) => {
  process.stderr.write(`spawn-rate: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
