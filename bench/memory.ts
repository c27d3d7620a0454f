/**
 * The client's memory for a big workload (target: ≤ 150 MiB per 100,000 tasks):
 *
 * - `client_rss_mb_per_100k_tasks`: N `/bin/true` tasks (1 core each) submitted to a local
 *   pilot with every core, waited until every one is final (and DONE); the growth of this
 *   process's resident set from before `Session.open` to then, at rest (a full GC, then
 *   `rest_ms` idle, past the session's quiet time after which it gives memory back:
 *   src/client/runtime/memory-trimmer.ts), in MiB, scaled to 100,000 tasks.
 *   The client keeps every Task object referenced, as a user script holding the list would.
 *   Tasks go in waves of 10,000, each waited final before the next: submitted all at once,
 *   the agent's input stager opens a sandbox file for every task at the same time and fails
 *   the tasks beyond `ulimit -n` with EMFILE (20,000 here; reported, not a bench matter).
 *
 * The growth includes the fixed cost of a session and a pilot (sockets, the embedded store, the
 * launcher), reported apart as `fixed_rss_mb` (before open to pilot active), so the figure is an
 * upper bound: it is not a slope. Context: `rss_mb_before` / `_after`, `peak_rss_mb` (the
 * process's maximum resident set), `heap_used_mb_before` / `_after` and `heap_total_mb_after`
 * (V8 heap after a full GC), `external_mb_before` / `_after` (memory of C++ objects and
 * buffers held by JS), `c_heap_trim` (whether the trim addon is built), `c_heap_mb_after` and
 * `c_heap_free_mb_after` (glibc's heaps and mmapped blocks, and what of the heaps is free),
 * `seconds` and `tasks_per_s` of the run.
 *
 * The measurement runs in a fresh child process (`node --expose-gc dist/bench/memory.js N`), so
 * the heap left by benchmarks run before it in `npm run bench` does not count, and a full GC
 * can be forced before each reading. (Setting --expose-gc at run time with
 * `v8.setFlagsFromString` was tried: the local agent then lost its stdin pipe at start-up.)
 *
 * Quick runs use 500 tasks; scaling the fixed cost by 200 makes their figure meaningless,
 * which is fine: quick figures are not measurements.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PilotManager, Session, TaskManager, type Task } from '../src';
import { nowNs, removeTree, secondsBetween, sig, type BenchOptions, type Figure } from './harness';
import { nativeMemory } from '../src/lib/native-memory';
import { runProcess } from './references';

export const name = 'memory';
export const description =
  'client RSS growth for 100,000 /bin/true tasks on a local pilot, all final, per 100k tasks';

const MIB = 2 ** 20;
/**
 * How long the client rests after its last task is final before the reading: past the
 * session's quiet time (1 s), after which it reduces V8's heap (a full-GC pause) and gives its
 * free C heap back to the kernel.
 */
const REST_MS = 2_500;

/**
 * The compiled form of this module, which the child runs. Under ts-jest this module is
 * bench/memory.ts, which plain node cannot run: fall back to the build output (`npm run build`).
 */
export function childScript(dir: string = __dirname): string {
  const local = path.join(dir, 'memory.js');
  if (fs.existsSync(local)) return local;
  const built = path.resolve(dir, '../dist/bench/memory.js');
  if (fs.existsSync(built)) return built;
  throw new Error(`bench memory: '${local}' or '${built}' not found: run 'npm run build'`);
}

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const n = quick ? 500 : 100_000;
  const r = await runProcess(process.execPath, ['--expose-gc', childScript(), String(n)], {
    timeoutMs: 3_600_000,
    inheritStderr: !quick,
  });
  if (r.code !== 0) {
    throw new Error(`bench memory: child exited with ${r.code ?? r.signal}: ${r.stderr.trim()}`);
  }
  const last = r.stdout.trim().split('\n').pop() ?? '';
  emit(JSON.parse(last) as Figure);
}

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (typeof g !== 'function') throw new Error('bench memory: run the child with --expose-gc');
  g();
}

interface Snapshot {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
}

function snapshot(): Snapshot {
  gc();
  const m = process.memoryUsage();
  return {
    rss: m.rss / MIB,
    heapUsed: m.heapUsed / MIB,
    heapTotal: m.heapTotal / MIB,
    external: m.external / MIB,
  };
}

const progress = (line: string): void => void process.stderr.write(`bench memory: ${line}\n`);

/** The measurement, in the child: prints the figure as one JSON line on stdout. */
async function measure(n: number): Promise<Figure> {
  const bulk = 10_000;
  const before = snapshot();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-memory-'));
  const session = await Session.open({ dir });
  try {
    const pmgr = new PilotManager(session);
    const tmgr = new TaskManager(session);
    const [pilot] = await pmgr.submitPilots([{ resource: 'local', runtimeMin: 60 }]);
    await pmgr.waitPilots({ uids: [pilot!.uid], states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
    tmgr.addPilots([pilot!]);
    const fixed = snapshot().rss - before.rss;

    const t0 = nowNs();
    const tasks: Task[] = [];
    for (let i = 0; i < n; i += bulk) {
      const descs = Array.from({ length: Math.min(bulk, n - i) }, () => ({
        executable: '/bin/true',
      }));
      const wave = await tmgr.submitTasks(descs);
      tasks.push(...wave);
      await tmgr.waitTasks({ uids: wave.map((t) => t.uid), timeoutMs: 3_000_000 });
      if (n > bulk) {
        const s = secondsBetween(t0, nowNs());
        progress(`${tasks.length} of ${n} tasks final after ${s.toFixed(0)} s`);
      }
    }
    const secs = secondsBetween(t0, nowNs());
    const notDone = tasks.filter((t) => t.state !== 'DONE');
    if (notDone.length > 0) {
      const states = new Map<string, number>();
      for (const t of notDone) states.set(t.state, (states.get(t.state) ?? 0) + 1);
      throw new Error(
        `bench memory: ${notDone.length} of ${n} tasks did not end DONE: ` +
          `${JSON.stringify(Object.fromEntries(states))}; first: ${notDone[0]!.uid} ` +
          `${JSON.stringify(notDone[0]!.reason)}`,
      );
    }

    // At rest: garbage collected, then the session's quiet-time release done.
    gc();
    await new Promise((resolve) => setTimeout(resolve, REST_MS));
    const after = snapshot();
    const cHeap = nativeMemory()?.info();
    const peak = process.resourceUsage().maxRSS / 1024; // KiB -> MiB
    // every task stays referenced until after the measurement
    if (tasks.length !== n) throw new Error('bench memory: lost tasks');
    return {
      metric: 'client_rss_mb_per_100k_tasks',
      value: sig(((after.rss - before.rss) * 100_000) / n),
      unit: 'MiB',
      tasks: n,
      submit: `waves of ${bulk}, each final before the next`,
      rss_mb_before: sig(before.rss),
      rss_mb_after: sig(after.rss),
      fixed_rss_mb: sig(fixed),
      peak_rss_mb: sig(peak),
      heap_used_mb_before: sig(before.heapUsed),
      heap_used_mb_after: sig(after.heapUsed),
      heap_total_mb_after: sig(after.heapTotal),
      external_mb_before: sig(before.external),
      external_mb_after: sig(after.external),
      rest_ms: REST_MS,
      c_heap_trim: nativeMemory() !== undefined,
      ...(cHeap === undefined
        ? {}
        : {
            c_heap_mb_after: sig((cHeap.heapBytes + cHeap.mmapBytes) / MIB),
            c_heap_free_mb_after: sig(cHeap.freeBytes / MIB),
          }),
      seconds: sig(secs),
      tasks_per_s: sig(n / secs),
      pilot_cores: pilot!.cores,
    };
  } finally {
    const t0 = nowNs();
    await session.close();
    const t1 = nowNs();
    removeTree(dir);
    if (n > bulk) {
      progress(
        `session closed in ${secondsBetween(t0, t1).toFixed(1)} s, ` +
          `its directory removed in ${secondsBetween(t1, nowNs()).toFixed(1)} s`,
      );
    }
  }
}

if (require.main === module) {
  measure(Number(process.argv[2])).then(
    (figure) => void process.stdout.write(`${JSON.stringify(figure)}\n`),
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
