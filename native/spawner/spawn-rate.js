// Measures spawns/s of a trivial task through SpawnerPool, for each spawner helper.
//
//   npm run build && node native/spawner/spawn-rate.js [--n 5000] [--count 2] [--per 4]
//       [--helper native|node|both] [--exe /bin/true] [--rounds 3] [--tracking cgroup|proc]
//       [--output devnull|files|stream[,...]] [--ahead K] [--hold-ms N[,...]]
//
// Keeps count*per tasks in flight (each exit starts the next), as the Executor does, and times
// n exits after a warm-up of n/10. Prints one JSON line per helper, output and round on stdout,
// with the helpers' own CPU time (user + system, from /proc) per spawn, which a busy box disturbs
// less than the rate, and this process's (the pool's: it reads the events). --tracking picks how
// the helpers track task processes (default: a cgroup per task where the machine offers it).
// --output says where the tasks' stdout and stderr go: devnull (both paths /dev/null, the
// default), files (two new files per task, as a task sandbox has) or stream (output 'stream':
// pipes framed into the helpers' stream files); several, comma-separated, alternate round by
// round, each with its own pool. --ahead K (follow-on starts, SpawnSpec.after): each of the
// count*per slots is a chain, its task and K more queued behind it in its helper, and each start
// sends one more behind the slot's last, so the helper starts the next without waiting for this
// process. --hold-ms (SpawnerPoolOptions.holdMs; a list alternates, as --output does, each
// combination with its own pool). A measurement, not a test: nothing here asserts a time.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const dist = path.resolve(__dirname, '../../dist/src/components/executor/process/spawner-pool.js');
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
const OUTPUTS = option('output', 'devnull').split(',');
const AHEAD = Number(option('ahead', '0'));
const HOLDS = option('hold-ms', '0').split(',').map(Number);
const helpers = which === 'both' ? ['native', 'node'] : [which];
for (const o of OUTPUTS) {
  if (!['devnull', 'files', 'stream'].includes(o)) {
    process.stderr.write(`spawn-rate: --output must list devnull, files or stream, not '${o}'\n`);
    process.exit(2);
  }
}

const logger = {
  error: (m, meta) => process.stderr.write(`error ${m} ${JSON.stringify(meta ?? {})}\n`),
  warn: (m, meta) => process.stderr.write(`warn ${m} ${JSON.stringify(meta ?? {})}\n`),
  info: () => undefined,
  debug: () => undefined,
  child: () => logger,
};

/** Where a task's output goes, as its spec says. */
function outputOf(output, dir, uid) {
  if (output === 'stream') return { stream: { attempt: 1 } };
  if (output === 'files') {
    return { stdoutPath: path.join(dir, `${uid}.out`), stderrPath: path.join(dir, `${uid}.err`) };
  }
  return { stdoutPath: '/dev/null', stderrPath: '/dev/null' };
}

/** Runs `total` tasks with `inFlight` at a time; resolves with the seconds it took. */
function run(pool, state, total, inFlight, dir, output) {
  return new Promise((resolve, reject) => {
    let started = 0;
    let done = 0;
    const t0 = process.hrtime.bigint();
    state.onStarted = () => undefined;
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
      if (AHEAD === 0) for (let i = 0; i < n && started < total; i++) next();
    };
    /** Spawns the next task (after `after`, if given); returns its uid. */
    const next = (after) => {
      const uid = `t${state.seq++}`;
      started++;
      pool.spawn({
        uid,
        executable: EXE,
        args: [],
        env: { PF_TASK_ID: uid },
        cwd: dir,
        ...outputOf(output, dir, uid),
        ...(after === undefined ? {} : { after }),
      });
      return uid;
    };
    if (AHEAD === 0) {
      for (let i = 0; i < inFlight && started < total; i++) next();
      return;
    }
    // --ahead: one chain per slot; each start sends the next behind the slot's last
    const last = [];
    const slotOf = new Map();
    const chain = (slot) => {
      last[slot] = next(last[slot]);
      slotOf.set(last[slot], slot);
    };
    state.onStarted = (evs) => {
      for (const e of evs) {
        const slot = slotOf.get(e.uid);
        slotOf.delete(e.uid);
        if (slot !== undefined && started < total) chain(slot);
      }
    };
    for (let slot = 0; slot < inFlight; slot++) {
      for (let k = 0; k <= AHEAD && started < total; k++) chain(slot);
    }
  });
}

/** CPU seconds (user + system) the process has used, from /proc/<pid>/stat. */
function cpuSeconds(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ is 100 on Linux
}

/** A pool for `output`, warmed up, with its own directory. */
async function startPool(helper, output, holdMs) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-spawn-rate-'));
  const state = { seq: 0, onDone: () => undefined, onStarted: () => undefined };
  const pool = await SpawnerPool.start({
    count: COUNT,
    helper,
    logger,
    holdMs,
    ...(TRACKING === undefined ? {} : { tracking: TRACKING }),
    ...(output === 'stream' ? { streamDir: path.join(dir, 'streams') } : {}),
    handlers: {
      started: (evs) => state.onStarted(evs),
      exited: (evs) => state.onDone(evs.length, []),
      failed: (evs) => state.onDone(evs.length, evs),
    },
  });
  const work = path.join(dir, 'work');
  fs.mkdirSync(work);
  await run(pool, state, Math.max(1, Math.floor(N / 10)), COUNT * PER, work, output); // warm-up
  return { pool, state, dir, work, output, holdMs };
}

/** One timed round on a pool: its JSON line. */
async function round(helper, p) {
  // a fresh directory for the files of 'files' (outside the timing)
  fs.rmSync(p.work, { recursive: true, force: true });
  fs.mkdirSync(p.work);
  const helperPids = p.pool.helpers.map((h) => h.pid);
  const cpu = () => helperPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  const cpu0 = cpu();
  const own0 = process.cpuUsage();
  const s = await run(p.pool, p.state, N, COUNT * PER, p.work, p.output);
  const own = process.cpuUsage(own0);
  const figure = {
    bench: 'spawn-rate',
    helper,
    tracking: p.pool.tracking,
    output: p.output,
    ahead: AHEAD,
    holdMs: p.holdMs,
    helpers: COUNT,
    perHelper: PER,
    n: N,
    executable: EXE,
    seconds: Number(s.toFixed(3)),
    spawnsPerSecond: Math.round(N / s),
    helperCpuUsPerSpawn: Math.round(((cpu() - cpu0) / N) * 1e6),
    poolCpuUsPerSpawn: Math.round((own.user + own.system) / N),
    cpus: os.cpus().length,
  };
  process.stdout.write(`${JSON.stringify(figure)}\n`);
}

/** ROUNDS rounds of each output, alternating, on the helper `helper`. */
async function measure(helper) {
  const pools = [];
  try {
    for (const output of OUTPUTS) {
      for (const hold of HOLDS) pools.push(await startPool(helper, output, hold));
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (const p of pools) await round(helper, p);
    }
  } finally {
    for (const p of pools) {
      await p.pool.close();
      fs.rmSync(p.dir, { recursive: true, force: true });
    }
  }
}

(async () => {
  for (const helper of helpers) await measure(helper);
})().catch((e) => {
  process.stderr.write(`spawn-rate: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
