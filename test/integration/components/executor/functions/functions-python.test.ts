/**
 * FunctionPool over real Python workers (workers/python_worker.py) running real Python modules
 * in a temp dir. The interpreter must have msgpack: PF_TEST_PYTHON, else /usr/bin/python3
 * (python3-msgpack, scripts/system-deps.sh); the tests skip, saying why, when it lacks it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  FunctionPool,
  type FunctionCallJob,
  type FunctionPoolOptions,
} from '../../../../../src/components/executor/functions/function-pool';
import { onPath } from '../../../../../src/components/executor/functions/worker-process';
import { silentLogger } from '../../../../../src/lib/logger';
import { cleanupFifos, fifo } from '../../../../support/fifo';
import { waitForExit } from '../../../../support/processes';
import { PoolEvents } from './function-pool-fixtures';

const PYTHON = process.env.PF_TEST_PYTHON ?? '/usr/bin/python3';

function hasMsgpack(python: string): boolean {
  return spawnSync(python, ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0;
}

/** A python3 on PATH (or this machine's usual places) that lacks msgpack, for the start failure. */
function pythonWithoutMsgpack(): string | undefined {
  const found = [onPath('python3'), path.join(os.homedir(), '.pyenv/shims/python3')];
  return found.find((p) => p !== undefined && fs.existsSync(p) && !hasMsgpack(p));
}

const usable = hasMsgpack(PYTHON);
const without = pythonWithoutMsgpack();
if (!usable) console.warn(`skipped: ${PYTHON} has no msgpack (bash scripts/system-deps.sh)`);
if (without === undefined) console.warn('start failure test skipped: every python3 has msgpack');

const MODULES: Record<string, string> = {
  'pfmods/__init__.py': '',
  'pfmods/calc.py': `
import asyncio, os, sys, datetime

def double(x):
    return x * 2

async def adouble(x):
    await asyncio.sleep(0)
    return x * 2

def env(*names):
    return [os.environ.get(n) for n in names]

def set_env(k, v):
    os.environ[k] = v
    return v

def cwd():
    return os.getcwd()

def raises():
    raise ValueError('out of range: 7')

async def araises():
    await asyncio.sleep(0.001)
    raise KeyError('late')

def opens():
    open('/no/such/file')

def unencodable():
    return {'items': [1, 2, 3, {'s': {1, 2}}]}

def int_key():
    return {'a': {3: 'x'}}

def cycle():
    d = {'a': []}
    d['a'].append(d)
    return d

def plain():
    return {'n': None, 't': True, 'f': 1.5, 'b': b'\\x00\\x01', 'l': [1, 'two'], 'tu': (3, 4),
            'big': 2**63, 'neg': -2**63, 'when': datetime.datetime(2020, 1, 2, tzinfo=datetime.timezone.utc)}

def big(n):
    return 'x' * n

def prints():
    print('to stdout')
    print('to stderr', file=sys.stderr)
    return 1

def spin():
    while True:
        pass

def started(fifo):
    with open(fifo, 'w') as f:
        f.write('started\\n')

async def hang(fifo):
    started(fifo)
    await asyncio.Event().wait()

async def stubborn(fifo):
    started(fifo)
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass

def runs_a_loop(x):
    return asyncio.run(adouble(x))

def exit3():
    sys.stderr.write('leaving with 3\\n')
    os._exit(3)

def sys_exit():
    sys.exit(4)

def abort():
    os.abort()

def pid():
    return os.getpid()
`,
  'pfmods/broken.py': `
import os
with open(os.path.join(os.path.dirname(__file__), 'broken.count'), 'a') as f:
    f.write('imported\\n')
raise RuntimeError('broken at the top')
`,
  'script.py': 'def hello(who):\n    return "hello " + who\n',
  'extra/onpath.py': 'def where():\n    return "extra"\n',
};

(usable ? describe : describe.skip)('FunctionPool of Python workers', () => {
  let dir: string;
  let pool: FunctionPool | undefined;
  let events: PoolEvents;
  let n = 0;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-fpy-'));
    for (const [name, text] of Object.entries(MODULES)) {
      fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      fs.writeFileSync(path.join(dir, name), text);
    }
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    cleanupFifos();
    await pool?.close();
    pool = undefined;
  });

  async function start(more: Partial<FunctionPoolOptions> = {}): Promise<FunctionPool> {
    events = new PoolEvents();
    pool = await FunctionPool.start({
      workers: 2,
      language: 'python',
      python: PYTHON,
      logger: silentLogger,
      handlers: events.handlers,
      logDir: dir,
      killGraceMs: 2_000,
      ...more,
    });
    return pool;
  }

  /** A call of pfmods.calc's `fn` (or of `module`), from the temp dir, with a fresh uid. */
  function job(fn: string, args?: unknown[], more: Partial<FunctionCallJob> = {}) {
    const j: FunctionCallJob = {
      uid: `py.${++n}`,
      module: 'pfmods.calc',
      export: fn,
      env: {},
      cwd: dir,
      worker: 0,
      ...more,
    };
    if (args !== undefined) j.args = args;
    return j;
  }

  it('runs sync and async functions, 2,000 calls through 2 workers', async () => {
    const p = await start();
    const jobs = Array.from({ length: 2_000 }, (_, i) =>
      job(i % 2 === 0 ? 'double' : 'adouble', [i], { worker: i % 4 < 2 ? 0 : 1 }),
    );
    for (let i = 0; i < jobs.length; i += 64) p.call(jobs.slice(i, i + 64));
    await events.until('2,000 outcomes', () => events.finished.size === 2_000, 60_000);
    for (let i = 0; i < jobs.length; i++) expect(await events.value(jobs[i]!.uid)).toBe(i * 2);
    expect(new Set([...events.started.values()].flat())).toEqual(new Set(p.pids()));
  }, 90_000);

  it('carries plain data back as msgpack', async () => {
    await start();
    const c = job('plain');
    pool!.call([c]);
    expect(await events.value(c.uid)).toEqual({
      n: null,
      t: true,
      f: 1.5,
      b: Buffer.from([0, 1]),
      l: [1, 'two'],
      tu: [3, 4],
      big: 2n ** 63n,
      neg: -(2n ** 63n),
      when: new Date('2020-01-02T00:00:00Z'),
    });
  });

  it('imports a file by path and a module from the task PYTHONPATH', async () => {
    await start();
    const file = job('hello', ['you'], { module: path.join(dir, 'script.py') });
    const rel = job('hello', ['rel'], { module: 'script.py' });
    const onpath = job('where', [], { module: 'onpath', env: { PYTHONPATH: 'extra' } });
    pool!.call([file, rel, onpath]);
    expect(await events.value(file.uid)).toBe('hello you');
    expect(await events.value(rel.uid)).toBe('hello rel');
    expect(await events.value(onpath.uid)).toBe('extra');
  });

  it('reports a raise: class name, str(e), the traceback without the worker, errno code', async () => {
    await start();
    const raised = job('raises');
    const late = job('araises');
    const os = job('opens');
    pool!.call([raised, late, os]);
    const o = await events.outcome(raised.uid);
    expect(o).toMatchObject({
      ok: false,
      phase: 'call',
      error: { name: 'ValueError', message: 'out of range: 7' },
    });
    const stack = !o.ok ? (o.error.stack ?? '') : '';
    expect(stack).toMatch(/^Traceback \(most recent call last\):/);
    expect(stack).toContain(`${path.join(dir, 'pfmods', 'calc.py')}", line 22, in raises`);
    expect(stack).toContain('ValueError: out of range: 7');
    expect(stack).not.toContain('python_worker');
    expect(await events.outcome(late.uid)).toMatchObject({
      ok: false,
      error: { name: 'KeyError', message: "'late'" },
    });
    expect(await events.outcome(os.uid)).toMatchObject({
      ok: false,
      error: { name: 'FileNotFoundError', code: 'ENOENT' },
    });
  });

  it('imports a broken module once per worker and fails its calls with the same error', async () => {
    await start();
    const calls = [0, 1, 2, 3].map((i) => job('f', [], { module: 'pfmods.broken', worker: i % 2 }));
    pool!.call(calls.slice(0, 2));
    await events.until('first two', () => events.finished.size === 2);
    pool!.call(calls.slice(2));
    for (const c of calls) {
      expect(await events.outcome(c.uid)).toMatchObject({
        ok: false,
        phase: 'import',
        error: { name: 'RuntimeError', message: 'broken at the top' },
      });
    }
    expect(fs.readFileSync(path.join(dir, 'pfmods', 'broken.count'), 'utf8')).toBe(
      'imported\nimported\n',
    );
    const missing = job('f', [], { module: 'pfmods.nope' });
    const noFn = job('nope');
    const noExport = job('x');
    delete noExport.export;
    pool!.call([missing, noFn, noExport]);
    expect(await events.outcome(missing.uid)).toMatchObject({
      ok: false,
      phase: 'import',
      error: { name: 'ModuleNotFoundError', message: "No module named 'pfmods.nope'" },
    });
    expect(await events.outcome(noFn.uid)).toMatchObject({
      ok: false,
      phase: 'call',
      error: {
        message: expect.stringMatching(
          /^module 'pfmods.calc' has no function 'nope'; its functions: abort, adouble, araises, big, cwd, /,
        ) as unknown,
      },
    });
    expect(await events.outcome(noExport.uid)).toMatchObject({
      ok: false,
      error: {
        message: expect.stringContaining('name the function to call in function.export') as unknown,
      },
    });
  });

  it('refuses a result it cannot encode, naming its path, and one over the size limit', async () => {
    await start({ maxResultBytes: 1000 });
    const set = job('unencodable');
    const key = job('int_key');
    const cycle = job('cycle');
    const big = job('big', [2000]);
    const fits = job('big', [900]);
    pool!.call([set, key, cycle, big, fits]);
    const encodeError = (message: string) => ({
      ok: false,
      phase: 'encode',
      error: { name: 'EncodeError', message },
    });
    expect(await events.outcome(set.uid)).toMatchObject(
      encodeError(
        "result['items'][3]['s']: a set cannot be encoded (return dicts, lists and plain values)",
      ),
    );
    expect(await events.outcome(key.uid)).toMatchObject(
      encodeError("result['a'][3]: a key of type int cannot be encoded (keys are strings)"),
    );
    expect(await events.outcome(cycle.uid)).toMatchObject(
      encodeError("result['a'][0]: a cycle (it is the value at result)"),
    );
    const o = await events.outcome(big.uid);
    expect(o).toMatchObject({ ok: false, phase: 'encode', error: { name: 'ResultTooLarge' } });
    expect(!o.ok && o.error.message).toContain('over the limit of 1000 bytes');
    expect(await events.value(fits.uid)).toBe('x'.repeat(900));
  });

  it('sets each call its env and cwd, and restores the worker env after it', async () => {
    await start({ env: { PF_BASE: 'base' } });
    const names = ['PF_TASK_ID', 'PF_BASE'];
    const a = job('env', names, { env: { PF_TASK_ID: 'a', PF_BASE: 'over' } });
    const b = job('env', names, { env: { PF_TASK_ID: 'b' } });
    const set = job('set_env', ['PF_TASK_ID', 'changed'], { env: { PF_TASK_ID: 'c' } });
    const after = job('env', names);
    const here = job('cwd');
    pool!.call([a, b, set]);
    expect(await events.value(a.uid)).toEqual(['a', 'over']);
    expect(await events.value(b.uid)).toEqual(['b', 'base']);
    await events.value(set.uid);
    pool!.call([after, here]);
    expect(await events.value(after.uid)).toEqual([null, 'base']);
    expect(await events.value(here.uid)).toBe(dir);
  });

  // protocol 2 sends a call's environment and cwd as changes to the previous call's: calls of
  // one frame run back to back, with no restore between them
  it('gives each call of a bulk its own environment and cwd, none of the call before', async () => {
    await start({ env: { SHARED: 'base' } });
    const sub = path.join(dir, 'pfmods');
    const names = ['ONLY_1', 'SHARED', 'PF_TASK_ID'];
    const one = job('env', names, { env: { ONLY_1: 'x', SHARED: 's', PF_TASK_ID: '1' } });
    const two = job('env', names, { env: { SHARED: 's', PF_TASK_ID: '2' } });
    const none = job('env', names);
    const here = job('cwd');
    const home = job('cwd');
    delete home.cwd; // the worker's own
    const there = job('cwd', [], { cwd: sub });
    // a function that changes a variable of its call: the next call with the same value has it
    const mutates = job('set_env', ['SHARED', 'changed'], { env: { SHARED: 's' } });
    const same = job('env', names, { env: { SHARED: 's' } });
    const idle = job('env', names);
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
    const names = ['PF_TASK_ID', 'KEEP'];
    const env = { PF_TASK_ID: 't', KEEP: 'k' };
    const first = job('env', names, { env });
    const dies = job('exit3', [], { env });
    // sent to the worker that dies as "no change" (as `first`), then to its replacement
    const behind = job('env', names, { env });
    const where = job('cwd', [], { env });
    pool!.call([first]);
    expect(await events.value(first.uid)).toEqual(['t', 'k']);
    pool!.call([dies, behind, where]);
    expect(await events.lost(dies.uid)).toMatchObject({ code: 'E_WORKER_DIED', exitCode: 3 });
    expect(await events.value(behind.uid)).toEqual(['t', 'k']);
    expect(await events.value(where.uid)).toBe(dir);
    const later = job('env', names, { env });
    pool!.call([later]);
    expect(await events.value(later.uid)).toEqual(['t', 'k']);
  });

  it('cancels a running coroutine at once and a waiting call; the worker goes on', async () => {
    await start();
    const f = fifo(path.join(dir, `fifo.${++n}`));
    const hang = job('hang', [path.join(dir, `fifo.${n}`)]);
    const queued = job('double', [1]);
    const next = job('double', [21]);
    pool!.call([hang, queued]);
    const pid = await events.pid(queued.uid);
    await f.lines(1); // it runs
    pool!.stop(queued.uid, 'term');
    pool!.stop(hang.uid, 'term');
    expect(await events.outcome(hang.uid)).toEqual({
      uid: hang.uid,
      ok: false,
      phase: 'call',
      error: { name: 'Canceled', message: 'the call was canceled while it ran' },
    });
    expect(await events.outcome(queued.uid)).toMatchObject({
      ok: false,
      error: { message: 'the call was canceled before it started' },
    });
    pool!.call([next]);
    expect(await events.value(next.uid)).toBe(42);
    expect(await events.pid(next.uid)).toBe(pid);
  });

  it('runs a sync function that runs its own asyncio loop', async () => {
    await start();
    const c = job('runs_a_loop', [5]);
    const after = job('adouble', [6]);
    pool!.call([c, after]);
    expect(await events.value(c.uid)).toBe(10);
    expect(await events.value(after.uid)).toBe(12);
  });

  it('goes on after a canceled coroutine that ignores the cancel', async () => {
    await start();
    const f = fifo(path.join(dir, `fifo.${++n}`));
    const stubborn = job('stubborn', [path.join(dir, `fifo.${n}`)]);
    pool!.call([stubborn]);
    await f.lines(1); // it runs
    pool!.stop(stubborn.uid, 'term');
    expect(await events.outcome(stubborn.uid)).toMatchObject({
      ok: false,
      error: { name: 'Canceled', message: 'the call was canceled while it ran' },
    });
    const next = [job('double', [1]), job('adouble', [2])];
    pool!.call(next);
    expect(await events.value(next[0]!.uid)).toBe(2);
    expect(await events.value(next[1]!.uid)).toBe(4);
  });

  it('ends `while True: pass` on stop kill; the worker is replaced, the pool keeps its size', async () => {
    const p = await start();
    const spin = job('spin');
    const queued = job('double', [4]);
    p.call([spin, queued]);
    const pid = await events.pid(spin.uid);
    p.stop(spin.uid, 'term'); // a sync loop cannot see it
    p.stop(spin.uid, 'kill');
    expect(await events.lost(spin.uid)).toMatchObject({ code: 'E_WORKER_KILLED', pid });
    expect(await events.value(queued.uid)).toBe(8);
    expect(p.pids()[0]).not.toBe(pid);
    expect(p.size).toBe(2);
    await waitForExit(pid, 10_000);
  });

  it.each([
    ['abort', { exitCode: null, signal: 'SIGABRT' }, 'killed by SIGABRT'],
    ['exit3', { exitCode: 3, signal: null }, 'exit code 3); its stderr ends:\nleaving with 3'],
  ])(
    'fails only the call whose worker dies (%s) and replaces the worker',
    async (fn, how, text) => {
      const p = await start();
      const dies = job(fn);
      const behind = job('pid');
      const other = job('pid', [], { worker: 1 });
      const before = p.pids();
      p.call([dies, behind, other]);
      const lost = await events.lost(dies.uid);
      // killed by a signal with a call behind it unanswered: known only once it ran alone
      const blamed = how.signal === null ? before[0] : events.started.get(dies.uid)![1];
      expect(events.started.get(dies.uid)).toHaveLength(how.signal === null ? 1 : 2);
      expect(lost).toMatchObject({ code: 'E_WORKER_DIED', pid: blamed, ...how });
      expect(lost.message).toContain(text);
      const after = p.pids();
      expect(await events.value(behind.uid)).toBe(after[0]);
      expect(await events.value(other.uid)).toBe(before[1]);
      expect(after[0]).not.toBe(before[0]);
      expect(p.size).toBe(2);
    },
  );

  it('answers the calls that ran before one that ended its worker; that one is not run again', async () => {
    const p = await start();
    const first = job('double', [2]);
    const exits = job('sys_exit');
    const behind = job('pid');
    const before = p.pids()[0];
    p.call([first, exits, behind]);
    expect(await events.value(first.uid)).toBe(4);
    const lost = await events.lost(exits.uid);
    expect(lost).toMatchObject({ code: 'E_WORKER_DIED', pid: before, exitCode: 4 });
    expect(await events.value(behind.uid)).toBe(p.pids()[0]);
    expect(events.started.get(exits.uid)).toEqual([before]); // not sent to the replacement
  });

  it('sends what functions print to the worker log files, not into the protocol', async () => {
    await start();
    const c = job('prints');
    pool!.call([c]);
    expect(await events.value(c.uid)).toBe(1);
    expect(fs.readFileSync(path.join(dir, 'fworker-python.0.out'), 'utf8')).toContain(
      'to stdout\n',
    );
    expect(fs.readFileSync(path.join(dir, 'fworker-python.0.err'), 'utf8')).toContain(
      'to stderr\n',
    );
  });

  (without === undefined ? it.skip : it)(
    'fails to start with a clear message when the interpreter lacks msgpack',
    async () => {
      events = new PoolEvents();
      const started = FunctionPool.start({
        workers: 1,
        language: 'python',
        python: without!,
        logger: silentLogger,
        handlers: events.handlers,
        logDir: dir,
        killGraceMs: 1_000,
      });
      await expect(started).rejects.toThrow(
        /exited before it was ready \(exit code 70\); its stderr ends:\n.*'msgpack' cannot be imported.*pip install msgpack.*apt-get install python3-msgpack/s,
      );
    },
  );

  it('refuses an interpreter it cannot find', async () => {
    await expect(start({ python: path.join(dir, 'no-python') })).rejects.toThrow(
      `Python interpreter '${path.join(dir, 'no-python')}' for function workers not found or not executable (set agent.python)`,
    );
  });
});
