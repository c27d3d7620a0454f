/**
 * FunctionPool over real Node workers (the built dist/.../functions/worker/main.js: `npm run build`
 * first) running real module files in a temp dir.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  FunctionPool,
  MAX_START_FAILURES,
  type FunctionCallJob,
  type FunctionPoolOptions,
} from '../../../../../src/components/executor/functions/function-pool';
import { silentLogger } from '../../../../../src/lib/logger';
import { waitForExit } from '../../../../support/processes';
import { PoolEvents, alive, writeModules } from './function-pool-fixtures';

describe('FunctionPool', () => {
  let dir: string;
  let mods: Record<string, string>;
  let pool: FunctionPool | undefined;
  let events: PoolEvents;
  let n = 0;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-fpool-'));
    mods = writeModules(dir);
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  async function start(more: Partial<FunctionPoolOptions> = {}): Promise<FunctionPool> {
    events = new PoolEvents();
    pool = await FunctionPool.start({
      workers: 2,
      logger: silentLogger,
      handlers: events.handlers,
      logDir: dir,
      killGraceMs: 2_000,
      ...more,
    });
    return pool;
  }

  /** A call with a fresh uid. */
  function job(
    module: string,
    exp?: string,
    args?: unknown[],
    more: Partial<FunctionCallJob> = {},
  ) {
    const j: FunctionCallJob = { uid: `call.${++n}`, module, env: {}, worker: 0, ...more };
    if (exp !== undefined) j.export = exp;
    if (args !== undefined) j.args = args;
    return j;
  }

  it('returns the results of 10,000 sync and async calls through 2 workers', async () => {
    const p = await start();
    const jobs = Array.from({ length: 10_000 }, (_, i) =>
      i % 2 === 0
        ? job(mods['sync.js']!, undefined, [i], { worker: i % 4 < 2 ? 0 : 1 })
        : job(mods['async.mjs']!, undefined, [i], { worker: i % 4 < 2 ? 0 : 1 }),
    );
    for (let i = 0; i < jobs.length; i += 64) p.call(jobs.slice(i, i + 64));
    await events.until('10,000 outcomes', () => events.finished.size === 10_000, 60_000);
    for (let i = 0; i < jobs.length; i++) expect(await events.value(jobs[i]!.uid)).toBe(i * 2);
    const pids = new Set([...events.started.values()].flat());
    expect(pids).toEqual(new Set(p.pids()));
    expect(p.running()).toBe(0);
  }, 90_000);

  it('reports what a function threw: name, message, stack and code', async () => {
    await start();
    const thrown = job(mods['sync.js']!, 'throws');
    const rejected = job(mods['async.mjs']!, 'rejects');
    const str = job(mods['sync.js']!, 'throwsString');
    pool!.call([thrown, rejected, str]);
    const o = await events.outcome(thrown.uid);
    expect(o).toMatchObject({
      ok: false,
      phase: 'call',
      error: { name: 'RangeError', message: 'out of range: 7', code: 'E_SEVEN' },
    });
    const stack = !o.ok ? (o.error.stack ?? '') : '';
    expect(stack).toContain(mods['sync.js']);
    expect(stack).not.toContain('functions/worker/main');
    expect(await events.outcome(rejected.uid)).toMatchObject({
      ok: false,
      error: { name: 'TypeError', message: 'late no' },
    });
    expect(await events.outcome(str.uid)).toMatchObject({
      ok: false,
      error: { name: 'Error', message: 'a non-error value was thrown: just a string' },
    });
  });

  it('fails every call of a module that does not import, importing it once per worker', async () => {
    await start();
    const calls = [0, 1, 2, 3].map((i) =>
      job(mods['broken.js']!, undefined, [], { worker: i % 2 }),
    );
    pool!.call(calls.slice(0, 2));
    await events.until('first two', () => events.finished.size === 2);
    pool!.call(calls.slice(2));
    for (const c of calls) {
      expect(await events.outcome(c.uid)).toMatchObject({
        ok: false,
        phase: 'import',
        error: { name: 'SyntaxError', message: 'broken at the top' },
      });
    }
    const count = fs.readFileSync(path.join(dir, 'broken.count'), 'utf8');
    expect(count).toBe('imported\nimported\n');
    // the workers are fine
    const ok = job(mods['sync.js']!, undefined, [5]);
    pool!.call([ok]);
    expect(await events.value(ok.uid)).toBe(10);
  });

  it('names a missing module, and a missing export with the functions there are', async () => {
    await start();
    const missing = job(path.join(dir, 'no-such.js'));
    const noExport = job(mods['plain.js']!, 'nope');
    const noDefault = job(mods['plain.js']!);
    pool!.call([missing, noExport, noDefault]);
    expect(await events.outcome(missing.uid)).toMatchObject({ ok: false, phase: 'import' });
    expect(await events.outcome(noExport.uid)).toMatchObject({
      ok: false,
      error: {
        message: `module '${mods['plain.js']}' has no function 'nope'; its functions: helper`,
      },
    });
    expect(await events.outcome(noDefault.uid)).toMatchObject({
      ok: false,
      error: { message: expect.stringContaining('has no default export function') as unknown },
    });
  });

  it('resolves a package name and a relative path from the call cwd, and runs there', async () => {
    await start();
    const pkg = job('fpkg', 'hello', ['you'], { cwd: dir });
    const rel = job('./sync.js', 'cwd', [], { cwd: dir });
    const home = job(mods['sync.js']!, 'cwd');
    pool!.call([pkg, rel, home]);
    expect(await events.value(pkg.uid)).toBe('hello you');
    expect(await events.value(rel.uid)).toBe(dir);
    expect(await events.value(home.uid)).toBe(process.cwd());
  });

  it('sets each call its env, and restores the worker env after it', async () => {
    await start({ env: { PF_BASE: 'base' }, envOf: (i) => ({ CUDA_VISIBLE_DEVICES: String(i) }) });
    const env = (e: Record<string, string>, worker = 0) =>
      job(mods['sync.js']!, 'env', ['PF_TASK_ID', 'PF_BASE', 'CUDA_VISIBLE_DEVICES'], {
        env: e,
        worker,
      });
    const a = env({ PF_TASK_ID: 'a', PF_BASE: 'over' });
    const b = env({ PF_TASK_ID: 'b', CUDA_VISIBLE_DEVICES: '7' });
    const c = env({});
    const d = env({}, 1);
    // a function that changes a variable of its env does not leak it either
    const set = job(mods['sync.js']!, 'setEnv', ['PF_TASK_ID', 'changed'], {
      env: { PF_TASK_ID: 'e' },
    });
    const after = env({});
    pool!.call([a, b, c, d]);
    expect(await events.value(a.uid)).toEqual(['a', 'over', '0']);
    expect(await events.value(b.uid)).toEqual(['b', 'base', '7']);
    expect(await events.value(c.uid)).toEqual([null, 'base', '0']);
    expect(await events.value(d.uid)).toEqual([null, 'base', '1']);
    pool!.call([set]);
    await events.value(set.uid);
    pool!.call([after]);
    expect(await events.value(after.uid)).toEqual([null, 'base', '0']);
  });

  // protocol 2 sends a call's environment and cwd as changes to the previous call's: calls of
  // one frame run back to back, with no restore between them
  it('gives each call of a bulk its own environment and cwd, none of the call before', async () => {
    await start({ env: { SHARED: 'base' } });
    const sync = mods['sync.js']!;
    const sub = path.join(dir, 'node_modules');
    const names = ['ONLY_1', 'SHARED', 'PF_TASK_ID'];
    const env = (e: Record<string, string>, more: Partial<FunctionCallJob> = {}) =>
      job(sync, 'env', names, { env: e, cwd: dir, ...more });
    const one = env({ ONLY_1: 'x', SHARED: 's', PF_TASK_ID: '1' });
    const two = env({ SHARED: 's', PF_TASK_ID: '2' });
    const none = env({});
    const here = job(sync, 'cwd', [], { cwd: dir });
    const home = job(sync, 'cwd');
    const there = job(sync, 'cwd', [], { cwd: sub });
    // a function that changes a variable of its call: the next call with the same value has it
    const mutates = job(sync, 'setEnv', ['SHARED', 'changed'], { env: { SHARED: 's' } });
    const same = env({ SHARED: 's' });
    const idle = job(sync, 'env', names);
    pool!.call([one, two, none, here, home, there, mutates, same]);
    expect(await events.value(one.uid)).toEqual(['x', 's', '1']);
    expect(await events.value(two.uid)).toEqual([null, 's', '2']);
    expect(await events.value(none.uid)).toEqual([null, 'base', null]);
    expect(await events.value(here.uid)).toBe(dir);
    expect(await events.value(home.uid)).toBe(process.cwd());
    expect(await events.value(there.uid)).toBe(sub);
    expect(await events.value(same.uid)).toEqual([null, 's', null]);
    pool!.call([idle]);
    expect(await events.value(idle.uid)).toEqual([null, 'base', null]);
  });

  it('sends a replacement worker the whole environment and cwd again', async () => {
    await start();
    const sync = mods['sync.js']!;
    const more = { env: { PF_TASK_ID: 't', KEEP: 'k' }, cwd: dir };
    const first = job(sync, 'env', ['PF_TASK_ID', 'KEEP'], more);
    const dies = job(sync, 'exit3', [], more);
    // sent to the worker that dies as "no change" (as `first`), then to its replacement
    const behind = job(sync, 'env', ['PF_TASK_ID', 'KEEP'], more);
    const where = job(sync, 'cwd', [], more);
    pool!.call([first]);
    expect(await events.value(first.uid)).toEqual(['t', 'k']);
    pool!.call([dies, behind, where]);
    expect(await events.lost(dies.uid)).toMatchObject({ code: 'E_WORKER_DIED', exitCode: 3 });
    expect(await events.value(behind.uid)).toEqual(['t', 'k']);
    expect(await events.value(where.uid)).toBe(dir);
    const later = job(sync, 'env', ['PF_TASK_ID', 'KEEP'], more);
    pool!.call([later]);
    expect(await events.value(later.uid)).toEqual(['t', 'k']);
  });

  it('cancels a hanging async call on stop term; the worker goes on', async () => {
    await start();
    const hang = job(mods['async.mjs']!, 'hang');
    const next = job(mods['sync.js']!, undefined, [21]);
    pool!.call([hang]);
    const pid = await events.pid(hang.uid);
    pool!.stop(hang.uid, 'term');
    expect(await events.outcome(hang.uid)).toEqual({
      uid: hang.uid,
      ok: false,
      phase: 'call',
      error: { name: 'Canceled', message: 'the call was canceled while it ran' },
    });
    pool!.call([next]);
    expect(await events.value(next.uid)).toBe(42);
    expect(await events.pid(next.uid)).toBe(pid);
  });

  it('ends a sync endless loop on stop kill: the worker is replaced, the pool keeps its size', async () => {
    const p = await start();
    const spin = job(mods['sync.js']!, 'spin');
    const queued = job(mods['sync.js']!, undefined, [4]);
    p.call([spin, queued]);
    const pid = await events.pid(spin.uid);
    p.stop(spin.uid, 'term'); // cannot reach a loop that never yields
    p.stop(spin.uid, 'kill');
    expect(await events.lost(spin.uid)).toEqual({
      uid: spin.uid,
      code: 'E_WORKER_KILLED',
      message: `the function worker 0 (pid ${pid}) running the call was killed as asked`,
      pid,
      exitCode: null,
      signal: 'SIGKILL',
    });
    // the call queued behind it had not started: the replacement runs it
    expect(await events.value(queued.uid)).toBe(8);
    expect(events.started.get(queued.uid)).toEqual([pid, p.pids()[0]]);
    expect(p.pids()[0]).not.toBe(pid);
    expect(p.size).toBe(2);
    await waitForExit(pid, WAIT);
  });

  it.each([
    ['abort', { exitCode: null, signal: 'SIGABRT' }, 'killed by SIGABRT'],
    ['exit3', { exitCode: 3, signal: null }, 'exit code 3); its stderr ends:\nleaving with 3'],
  ])(
    'fails a call whose worker dies (%s) alone, and replaces the worker',
    async (fn, how, text) => {
      const p = await start();
      const dies = job(mods['sync.js']!, fn, [], { cwd: dir }); // where a core dump would go
      const behind = job(mods['sync.js']!, 'pid');
      const other = job(mods['sync.js']!, 'pid', [], { worker: 1 });
      const before = p.pids();
      p.call([dies, behind, other]);
      const lost = await events.lost(dies.uid);
      // killed by a signal with another call unanswered behind it, the worker may have held
      // that one's result: the call is known to be the one only once it killed a worker alone
      const blamed = how.signal === null ? before[0] : events.started.get(dies.uid)![1];
      expect(events.started.get(dies.uid)).toHaveLength(how.signal === null ? 1 : 2);
      expect(lost).toMatchObject({ code: 'E_WORKER_DIED', pid: blamed, ...how });
      expect(lost.message).toContain(`the function worker 0 (pid ${blamed}) died while it ran`);
      expect(lost.message).toContain(text);
      const after = p.pids();
      expect(await events.value(behind.uid)).toBe(after[0]);
      expect(await events.value(other.uid)).toBe(before[1]);
      expect(after[0]).not.toBe(before[0]);
      expect(after[1]).toBe(before[1]);
      expect(p.size).toBe(2);
    },
  );

  it('answers the calls that ran before one that ended its worker; that one is not run again', async () => {
    const p = await start();
    const sync = mods['sync.js']!;
    const first = job(sync, undefined, [4]);
    const exits = job(sync, 'exit3');
    const behind = job(sync, 'pid');
    const before = p.pids()[0];
    p.call([first, exits, behind]);
    expect(await events.value(first.uid)).toBe(8);
    const lost = await events.lost(exits.uid);
    expect(lost).toMatchObject({ code: 'E_WORKER_DIED', pid: before, exitCode: 3 });
    expect(await events.value(behind.uid)).toBe(p.pids()[0]);
    expect(events.started.get(exits.uid)).toEqual([before]); // not sent to the replacement
  });

  it('fails only the call that crashed its worker when results it held died with it, running the others again alone', async () => {
    const p = await start();
    const sync = mods['sync.js']!;
    const first = job(sync, undefined, [4]);
    const aborts = job(sync, 'abort', [], { cwd: dir }); // where a core dump would go
    const behind = job(sync, 'pid');
    const before = p.pids()[0];
    p.call([first, aborts, behind]);
    // the worker held the first result when SIGABRT took it: not failed for the crash
    expect(await events.value(first.uid)).toBe(8);
    const lost = await events.lost(aborts.uid);
    expect(lost).toMatchObject({ code: 'E_WORKER_DIED', signal: 'SIGABRT' });
    // known for sure only once it ran alone, in a replacement, and killed that one too
    expect(lost.pid).not.toBe(before);
    expect(events.started.get(aborts.uid)).toHaveLength(2);
    expect(await events.value(behind.uid)).toBe(p.pids()[0]);
    expect(p.size).toBe(2);
  });

  it('takes back a call that has not started, on either stop', async () => {
    await start();
    const hang = job(mods['async.mjs']!, 'hang');
    const waiting = job(mods['sync.js']!, undefined, [1]);
    const fresh = job(mods['sync.js']!, undefined, [1]);
    pool!.call([hang, waiting]);
    await events.pid(waiting.uid);
    pool!.stop(waiting.uid, 'kill');
    pool!.call([fresh]);
    pool!.stop(fresh.uid, 'term');
    for (const c of [waiting, fresh]) {
      expect(await events.outcome(c.uid)).toMatchObject({
        ok: false,
        error: { name: 'Canceled', message: 'the call was canceled before it started' },
      });
    }
    pool!.stop(hang.uid, 'term');
    await events.outcome(hang.uid);
    expect(pool!.running()).toBe(0);
  });

  it('refuses a result it cannot encode or over the size limit, naming why', async () => {
    await start({ maxResultBytes: 1000 });
    const fn = job(mods['sync.js']!, 'unencodable');
    const big = job(mods['sync.js']!, 'big', [2000]);
    const fits = job(mods['sync.js']!, 'big', [900]);
    pool!.call([fn, big, fits]);
    expect(await events.outcome(fn.uid)).toMatchObject({
      ok: false,
      phase: 'encode',
      error: { name: 'EncodeError', message: 'result.list[1].fn: a function cannot be encoded' },
    });
    expect(await events.outcome(big.uid)).toMatchObject({
      ok: false,
      phase: 'encode',
      error: { name: 'ResultTooLarge' },
    });
    expect(await events.value(fits.uid)).toBe('x'.repeat(900));
  });

  it('fails a call to a worker it does not have', async () => {
    await start();
    const stray = job(mods['sync.js']!, undefined, [1], { worker: 2 });
    pool!.call([stray]);
    expect(await events.lost(stray.uid)).toEqual({
      uid: stray.uid,
      code: 'E_NO_SUCH_WORKER',
      message: 'no function worker 2: the pool has workers 0 to 1',
    });
  });

  it('pins each worker to its cpus', async () => {
    const p = await start({ cpusOf: (i) => (i === 0 ? '0' : undefined) });
    const status = fs.readFileSync(`/proc/${p.pids()[0]}/status`, 'utf8');
    expect(status).toMatch(/^Cpus_allowed_list:\s+0$/m);
  });

  it('appends what the functions print to the log files of their worker', async () => {
    await start();
    const c = job(mods['sync.js']!, 'exit3');
    pool!.call([c]);
    await events.lost(c.uid);
    const err = fs.readFileSync(path.join(dir, 'fworker.0.err'), 'utf8');
    expect(err).toMatch(/--- pilotfish function worker 0 starts at .*\nleaving with 3\n/);
  });

  it('leaves no worker, nor what the functions started, once closed', async () => {
    const p = await start();
    const sleeper = job(mods['sync.js']!, 'sleeper', [], { worker: 1 });
    const hang = job(mods['async.mjs']!, 'hang');
    p.call([sleeper, hang]);
    const sleepPid = (await events.value(sleeper.uid)) as number;
    await events.pid(hang.uid);
    const pids = p.pids();
    expect(pids.every(alive)).toBe(true);
    expect(alive(sleepPid)).toBe(true);
    await p.close();
    pool = undefined;
    expect(pids.filter(alive)).toEqual([]);
    await waitForExit(sleepPid, WAIT);
    expect(await events.lost(hang.uid)).toMatchObject({ code: 'E_POOL_CLOSED' });
    const late = job(mods['sync.js']!);
    p.call([late]);
    expect(await events.lost(late.uid)).toMatchObject({ code: 'E_POOL_CLOSED' });
  });

  it('gives an index up when its replacement keeps failing to start, and says so', async () => {
    let launches = 0;
    const bad = { NODE_OPTIONS: `--require ${path.join(dir, 'no-such-preload.js')}` };
    const p = await start({ envOf: (i) => (i === 1 && ++launches > 1 ? bad : {}) });
    const dies = job(mods['sync.js']!, 'exit3', [], { worker: 1, cwd: dir });
    const behind = job(mods['sync.js']!, undefined, [1], { worker: 1 });
    p.call([dies, behind]);
    expect(await events.lost(dies.uid)).toMatchObject({ code: 'E_WORKER_DIED', exitCode: 3 });
    const lost = await events.lost(behind.uid);
    expect(lost.code).toBe('E_WORKER_START');
    expect(lost.message).toContain(
      `function worker 1 failed to start ${MAX_START_FAILURES} times, the last (exit code 1)`,
    );
    expect(lost.message).toContain('no-such-preload.js');
    expect(events.unusable).toEqual([lost.message]);
    expect(launches).toBe(1 + MAX_START_FAILURES);
    expect(p.size).toBe(1);
    expect(p.pids()[1]).toBe(-1);
    const later = job(mods['sync.js']!, undefined, [1], { worker: 1 });
    const fine = job(mods['sync.js']!, undefined, [1], { worker: 0 });
    p.call([later, fine]);
    expect(await events.lost(later.uid)).toMatchObject({ code: 'E_WORKER_START' });
    expect(await events.value(fine.uid)).toBe(2);
  });

  it('kills a worker that does not get ready in time', async () => {
    const hang = path.join(dir, 'hang-preload.js');
    fs.writeFileSync(hang, 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);\n');
    events = new PoolEvents();
    await expect(
      FunctionPool.start({
        workers: 1,
        logger: silentLogger,
        handlers: events.handlers,
        logDir: dir,
        killGraceMs: 1_000,
        startTimeoutMs: 500,
        env: { NODE_OPTIONS: `--require ${hang}` },
      }),
    ).rejects.toThrow(
      'function worker 0 exited before it was ready (killed by SIGKILL: it did not get ready within 500 ms)',
    );
  });

  it('fails to start, closing what it started, when a worker dies before it is ready', async () => {
    events = new PoolEvents();
    await expect(
      FunctionPool.start({
        workers: 2,
        logger: silentLogger,
        handlers: events.handlers,
        logDir: dir,
        killGraceMs: 1_000,
        env: { NODE_OPTIONS: `--require ${path.join(dir, 'no-such-preload.js')}` },
      }),
    ).rejects.toThrow(/function worker \d exited before it was ready \(exit code 1\)/);
  });
});

const WAIT = 10_000;
