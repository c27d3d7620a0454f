/**
 * For the FunctionPool tests: an event collector that tests await, and the modules the workers
 * run, written into a temp dir.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { unpack } from 'msgpackr';
import type {
  CallLost,
  CallOutcome,
  CallStarted,
  FunctionPoolHandlers,
} from '../../../../../src/components/executor/functions/function-pool';
import { deferred, withTimeout } from '../../../../../src/lib/deferred';

export const WAIT_MS = 10_000;

/** Collects pool events; tests await conditions on them. */
export class PoolEvents {
  /** uid -> pids it was started on, in order (a replacement restarts unstarted calls). */
  readonly started = new Map<string, number[]>();
  readonly finished = new Map<string, CallOutcome>();
  readonly failed = new Map<string, CallLost>();
  readonly unusable: string[] = [];
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  readonly handlers: FunctionPoolHandlers = {
    started: (evs: CallStarted[]) =>
      this.add(() => {
        for (const e of evs) this.started.set(e.uid, [...(this.started.get(e.uid) ?? []), e.pid]);
      }),
    finished: (evs) => this.add(() => evs.forEach((e) => this.finished.set(e.uid, e))),
    failed: (evs) => this.add(() => evs.forEach((e) => this.failed.set(e.uid, e))),
    unusable: (m) => this.add(() => this.unusable.push(m)),
  };

  until(what: string, check: () => boolean, ms = WAIT_MS): Promise<void> {
    if (check()) return Promise.resolve();
    const d = deferred<void>();
    this.waiters.push({ check, resolve: () => d.resolve() });
    return withTimeout(d.promise, ms, what);
  }

  async outcome(uid: string, ms = WAIT_MS): Promise<CallOutcome> {
    await this.until(`outcome of ${uid}`, () => this.finished.has(uid), ms);
    return this.finished.get(uid)!;
  }

  /** The decoded value the call returned (fails the test on an error). */
  async value(uid: string, ms = WAIT_MS): Promise<unknown> {
    const o = await this.outcome(uid, ms);
    if (!o.ok) throw new Error(`${uid} failed in ${o.phase}: ${o.error.name}: ${o.error.message}`);
    return unpack(o.value);
  }

  async lost(uid: string): Promise<CallLost> {
    await this.until(`loss of ${uid}`, () => this.failed.has(uid));
    return this.failed.get(uid)!;
  }

  async pid(uid: string): Promise<number> {
    await this.until(`start of ${uid}`, () => this.started.has(uid));
    return this.started.get(uid)!.at(-1)!;
  }

  private add(record: () => void): void {
    record();
    this.waiters = this.waiters.filter((w) => {
      if (!w.check()) return true;
      w.resolve();
      return false;
    });
  }
}

/** The test modules, by name, in `dir`. */
export function writeModules(dir: string): Record<string, string> {
  const files: Record<string, string> = {
    'sync.js': `
      module.exports = (x) => x * 2;
      module.exports.env = (...names) => names.map((n) => process.env[n] ?? null);
      module.exports.cwd = () => process.cwd();
      module.exports.throws = () => { const e = new RangeError('out of range: 7'); e.code = 'E_SEVEN'; throw e; };
      module.exports.throwsString = () => { throw 'just a string'; };
      module.exports.spin = () => { for (;;) {} };
      module.exports.abort = () => process.abort();
      module.exports.exit3 = () => { process.stderr.write('leaving with 3\\n'); process.exit(3); };
      module.exports.unencodable = () => ({ list: [1, { fn: () => 1 }] });
      module.exports.big = (n) => 'x'.repeat(n);
      module.exports.pid = () => process.pid;
      module.exports.sleeper = () => require('node:child_process').spawn('sleep', ['300'], { stdio: 'ignore' }).pid;
      module.exports.setEnv = (k, v) => { process.env[k] = v; return v; };
    `,
    'async.mjs': `
      export default async function double(x) { await null; return x * 2; }
      export function hang() { return new Promise(() => {}); }
      export async function rejects() { await new Promise((r) => setTimeout(r, 1)); throw new TypeError('late no'); }
      export async function later(ms, v) { await new Promise((r) => setTimeout(r, ms)); return v; }
    `,
    'broken.js': `
      require('node:fs').appendFileSync(__dirname + '/broken.count', 'imported\\n');
      throw new SyntaxError('broken at the top');
    `,
    'plain.js': `module.exports = { notAFunction: 1, helper() { return 'h'; } };`,
    'node_modules/fpkg/package.json': JSON.stringify({ name: 'fpkg', main: 'main.js' }),
    'node_modules/fpkg/main.js': `module.exports = { hello: (who) => 'hello ' + who };`,
  };
  const paths: Record<string, string> = {};
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(dir, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
    paths[name] = file;
  }
  return paths;
}

/** Whether process `pid` still exists (a zombie counts as gone). */
export function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
