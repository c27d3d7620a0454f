import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  PilotManager,
  Session,
  TaskManager,
  type Pilot,
  type SessionOptions,
  type TaskDescription,
} from '../src';

/**
 * What a benchmark reports: one measured number. `metric` names what was measured, `unit` its
 * unit (`1/s`, `ns`, `x`, …); any other field is context (sizes, run counts) that travels with
 * the figure so a reader can tell what produced it.
 */
export interface Figure {
  metric: string;
  value: number;
  unit: string;
  [context: string]: string | number | boolean;
}

/** A figure as printed: the benchmark's name first, then the figure, then the machine. */
export interface EmittedFigure extends Figure {
  bench: string;
}

export interface BenchOptions {
  /** A tiny N so the whole benchmark runs in well under a second (smoke test, `--quick`). */
  quick: boolean;
  emit: (figure: Figure) => void;
}

/** A module `bench/<name>.ts` is a Benchmark: `import * as x from './x'` satisfies it. */
export interface Benchmark {
  readonly name: string;
  readonly description: string;
  run(opts: BenchOptions): Promise<void>;
}

/** The machine a figure was taken on; added to every figure. */
export function machineContext(): Record<string, string | number> {
  const cpus = os.cpus();
  return {
    cores: cpus.length,
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    mem_gib: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()}-${os.arch()}`,
  };
}

/**
 * An `emit` for benchmark `bench`: adds the benchmark's name, the machine, the machine's
 * 1-minute load average when the figure was emitted (`load_1m`: on a shared box, a load well
 * above 0 means other work competed for the cores) and the date to each figure, and hands the
 * result to `write` (the harness writes one JSON line per figure).
 * `extra` is context for every figure of the run, e.g. `{ quick: true }`.
 *
 * A figure that cannot be measured (a peer not installed, no compiler) is not emitted at all:
 * the benchmark prints `bench NAME: skipped METRIC: REASON` on stderr instead. Every emitted
 * value is a finite positive number (the smoke test checks it).
 */
export function emitterFor(
  bench: string,
  write: (figure: EmittedFigure) => void,
  extra: Record<string, string | number | boolean> = {},
): (figure: Figure) => void {
  const machine = machineContext();
  return (figure: Figure): void => {
    const { metric, value, unit, ...context } = figure;
    write({
      bench,
      metric,
      value,
      unit,
      ...context,
      ...extra,
      ...machine,
      load_1m: Number(os.loadavg()[0]!.toFixed(2)),
      date: new Date().toISOString(),
    });
  };
}

/** Nanoseconds since an arbitrary origin, for intervals (process.hrtime, not the wall clock). */
export function nowNs(): bigint {
  return process.hrtime.bigint();
}

/** Seconds between two nowNs() readings. */
export function secondsBetween(start: bigint, end: bigint): number {
  return Number(end - start) / 1e9;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new RangeError('median of no values');
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The value below which a fraction `q` of `xs` lies (nearest rank; `xs` need not be sorted). */
export function percentile(xs: readonly number[], q: number): number {
  if (xs.length === 0) throw new RangeError('percentile of no values');
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

export function mean(xs: readonly number[]): number {
  if (xs.length === 0) throw new RangeError('mean of no values');
  let sum = 0;
  for (const x of xs) sum += x;
  return sum / xs.length;
}

export { mulberry32 } from '../src/lib/prng';

/** Rounds to `digits` significant digits, so figures do not pretend to a precision they lack. */
export function sig(x: number, digits = 3): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  return Number(x.toPrecision(digits));
}

/**
 * Removes a benchmark's directory tree: with rm -rf, about twice as fast as fs.rmSync on the
 * 400,000 files and directories of 100,000 task sandboxes (35 s with rmSync); rmSync if rm fails.
 */
export function removeTree(dir: string): void {
  const r = spawnSync('rm', ['-rf', '--', dir], { stdio: 'ignore' });
  if (r.status !== 0) fs.rmSync(dir, { recursive: true, force: true });
}

/** A session with one local pilot, active and added to a TaskManager. */
export interface LocalPilot {
  session: Session;
  pmgr: PilotManager;
  tmgr: TaskManager;
  pilot: Pilot;
}

/**
 * Runs `fn` in a session opened in a fresh directory under TMPDIR (task sandboxes included:
 * `TMPDIR=/dev/shm` puts them on tmpfs) with one local pilot of every core, active and added to
 * a TaskManager; then closes the session, runs `afterClose` on the session's directory (its
 * store complete: e.g. to read every notification) and removes the directory.
 */
export async function withLocalPilot<T>(
  prefix: string,
  fn: (p: LocalPilot) => Promise<T>,
  opts: {
    session?: Omit<SessionOptions, 'dir'>;
    afterClose?: (sessionDir: string) => Promise<void>;
  } = {},
): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  try {
    const session = await Session.open({ ...opts.session, dir });
    let out: T;
    try {
      const pmgr = new PilotManager(session);
      const tmgr = new TaskManager(session);
      const [pilot] = await pmgr.submitPilots([{ resource: 'local', runtimeMin: 60 }]);
      await pmgr.waitPilots({ uids: [pilot!.uid], states: ['PMGR_ACTIVE'], timeoutMs: 30_000 });
      tmgr.addPilots([pilot!]);
      out = await fn({ session, pmgr, tmgr, pilot: pilot! });
    } finally {
      await session.close();
    }
    await opts.afterClose?.(session.dir);
    return out;
  } finally {
    removeTree(dir);
  }
}

/**
 * Submits `descs` at once and waits for every one: seconds from the first submit to the last
 * final. Throws, naming the first, when one did not end DONE (a benchmark of failures is none).
 */
export async function runAll(
  bench: string,
  tmgr: TaskManager,
  descs: TaskDescription[],
): Promise<number> {
  const t0 = nowNs();
  const tasks = await tmgr.submitTasks(descs);
  await tmgr.waitTasks({ uids: tasks.map((t) => t.uid), timeoutMs: 1_200_000 });
  const secs = secondsBetween(t0, nowNs());
  const failed = tasks.filter((t) => t.state !== 'DONE');
  if (failed.length > 0) {
    const t = failed[0]!;
    const why = t.reason === undefined ? '' : `, ${t.reason.code}: ${t.reason.message}`;
    throw new Error(
      `${bench}: ${failed.length} of ${tasks.length} tasks did not end DONE (${t.uid}: ${t.state}${why})`,
    );
  }
  return secs;
}
