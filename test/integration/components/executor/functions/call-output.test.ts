/**
 * What a call prints while it runs comes back with its outcome (FunctionPoolOptions
 * maxOutputBytes; protocol: init maxOutputBytes, a result's stdout/stderr/dropped), from real
 * Node and Python workers: each stream's bytes in order, capped with a marker; a call that
 * prints nothing brings nothing; what is printed outside a call (an import, a timer or thread
 * left running) goes to the worker's log files as before.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  FunctionPool,
  type CallOutcome,
  type FunctionCallJob,
} from '../../../../../src/components/executor/functions/function-pool';
import type { WorkerLanguage } from '../../../../../src/components/executor/functions/worker-process';
import { silentLogger } from '../../../../../src/lib/logger';
import { fileContains } from '../../../../support/file-lines';
import { PoolEvents } from './function-pool-fixtures';

const PYTHON = process.env.PF_TEST_PYTHON ?? '/usr/bin/python3';
const pythonUsable = spawnSync(PYTHON, ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0;
if (!pythonUsable) console.warn(`Python cases skipped: ${PYTHON} has no msgpack`);

/** The same functions in each language: module, and the export names the tests call. */
const MODULES: Record<WorkerLanguage, { file: string; text: string }> = {
  node: {
    file: 'out.js',
    text: `
      process.stdout.write('imported\\n');
      let pending;
      exports.prints = (n) => {
        console.log('line 1 of', n);
        process.stdout.write('line 2 of ' + n + '\\n');
        console.error('err 1 of', n);
        process.stderr.write(Buffer.from('err 2 of ' + n + '\\n'));
        return n;
      };
      exports.quiet = (n) => n;
      exports.big = (n) => { process.stdout.write('a'.repeat(n)); process.stderr.write('b'.repeat(n)); };
      exports.later = async (n) => { console.log('before'); await new Promise((r) => setTimeout(r, 5)); console.log('after', n); return n; };
      exports.throws = () => { console.log('about to throw'); throw new Error('no'); };
      exports.leaves = () => { pending = setTimeout(() => console.log('timer after its call'), 1); return 1; };
      exports.partial = () => { process.stdout.write('no newline'); };
    `,
  },
  python: {
    file: 'out.py',
    text: `
import asyncio, sys, threading
print('imported')
def prints(n):
    print('line 1 of', n)
    sys.stdout.write(f'line 2 of {n}\\n')
    print('err 1 of', n, file=sys.stderr)
    sys.stderr.buffer.write(f'err 2 of {n}\\n'.encode())
    return n
def quiet(n):
    return n
def big(n):
    sys.stdout.write('a' * n)
    sys.stderr.write('b' * n)
async def later(n):
    print('before')
    await asyncio.sleep(0.005)
    print('after', n)
    return n
def throws():
    print('about to throw')
    raise ValueError('no')
def threads(n):
    ts = [threading.Thread(target=print, args=(f'thread {i}',)) for i in range(n)]
    for t in ts: t.start()
    for t in ts: t.join()
    return n
def leaves(fifo):
    def later():
        with open(fifo) as f:  # until the test writes to it, once the call was answered
            f.read()
        print('thread after its call')
    threading.Thread(target=later).start()
    return 1
def partial():
    sys.stdout.write('no newline')
`,
  },
};

const text = (b: Uint8Array | undefined): string | undefined =>
  b === undefined ? undefined : Buffer.from(b).toString('utf8');

const languages: WorkerLanguage[] = pythonUsable ? ['node', 'python'] : ['node'];

describe.each(languages)('what a call prints (%s workers)', (language) => {
  let dir: string;
  let module: string;
  let pool: FunctionPool | undefined;
  let events: PoolEvents;
  let n = 0;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-callout-'));
    module = path.join(dir, MODULES[language].file);
    fs.writeFileSync(module, MODULES[language].text);
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  async function start(maxOutputBytes = 64 * 1024): Promise<FunctionPool> {
    events = new PoolEvents();
    pool = await FunctionPool.start({
      workers: 2,
      language,
      python: PYTHON,
      logger: silentLogger,
      handlers: events.handlers,
      logDir: dir,
      killGraceMs: 2_000,
      maxOutputBytes,
    });
    return pool;
  }

  function job(exp: string, args: unknown[] = [], more: Partial<FunctionCallJob> = {}) {
    return { uid: `c.${++n}`, module, export: exp, args, env: {}, worker: 0, ...more };
  }

  it('brings each call its own stdout and stderr, in order; a quiet call brings none', async () => {
    const p = await start();
    const calls = [1, 2, 3].map((i) => job('prints', [i], { worker: i % 2, attempt: 2 }));
    const quiet = job('quiet', [7]);
    p.call([...calls, quiet]);
    for (const [i, c] of calls.entries()) {
      const o = await events.outcome(c.uid);
      expect(o.ok).toBe(true);
      expect(text(o.printed?.stdout)).toBe(`line 1 of ${i + 1}\nline 2 of ${i + 1}\n`);
      expect(text(o.printed?.stderr)).toBe(`err 1 of ${i + 1}\nerr 2 of ${i + 1}\n`);
      expect([o.printed?.attempt, o.printed?.dropped]).toEqual([2, undefined]);
    }
    expect((await events.outcome(quiet.uid)).printed).toBeUndefined();
    // the import's print is not a call's: it is in the worker's log
    const log = language === 'python' ? 'fworker-python' : 'fworker';
    const logs = [0, 1].map((i) => fs.readFileSync(path.join(dir, `${log}.${i}.out`), 'utf8'));
    expect(logs.join('')).toContain('imported\n');
  });

  it('keeps what an awaited call prints after it awaits, and what a call printed before it threw', async () => {
    const p = await start();
    const later = job('later', [5]);
    const throws = job('throws');
    const partial = job('partial');
    p.call([later, throws, partial]);
    expect(text((await events.outcome(later.uid)).printed?.stdout)).toBe('before\nafter 5\n');
    const threw: CallOutcome = await events.outcome(throws.uid);
    expect([threw.ok, text(threw.printed?.stdout)]).toEqual([false, 'about to throw\n']);
    expect(text((await events.outcome(partial.uid)).printed?.stdout)).toBe('no newline');
  });

  it('cuts a call over its cap: the first and last halves, a marker in each stream that lost bytes', async () => {
    const p = await start(1_000);
    const c = job('big', [2_000]);
    const small = job('big', [10], { outputCap: 4_096 }); // a cap above the pool's: the pool's
    const own = job('big', [300], { outputCap: 400 });
    p.call([c, small, own]);
    const o = await events.outcome(c.uid);
    // 500 bytes of a as they came; then the last 500 of all: b's
    expect(text(o.printed?.stdout)).toBe(`${'a'.repeat(500)}\n[pilotfish: 1500 bytes dropped]\n`);
    expect(text(o.printed?.stderr)).toBe(`[pilotfish: 1500 bytes dropped]\n${'b'.repeat(500)}`);
    expect(o.printed?.dropped).toBe(3_000);
    const s = await events.outcome(small.uid);
    expect([text(s.printed?.stdout), s.printed?.dropped]).toEqual(['a'.repeat(10), undefined]);
    const w = await events.outcome(own.uid);
    expect(text(w.printed?.stdout)).toBe(`${'a'.repeat(200)}\n[pilotfish: 100 bytes dropped]\n`);
    expect(text(w.printed?.stderr)).toBe(`[pilotfish: 100 bytes dropped]\n${'b'.repeat(200)}`);
  });

  it('sends what is printed after a call was answered to the log files', async () => {
    const p = await start();
    const go = path.join(dir, `go.${++n}`);
    execFileSync('mkfifo', [go]);
    const leaves = job('leaves', [go]);
    p.call([leaves]);
    const o = await events.outcome(leaves.uid);
    expect(o.printed).toBeUndefined();
    const log = path.join(dir, `${language === 'python' ? 'fworker-python' : 'fworker'}.0.out`);
    // Node: a timer, due once the call's turn is over; Python: a thread, let go now
    if (language === 'python') fs.writeFileSync(go, 'go');
    const said = language === 'python' ? 'thread after its call' : 'timer after its call';
    await fileContains(log, said);
  });

  // Node has no threads of its own (a worker_thread's stdout goes through the main thread)
  if (language === 'python') {
    it('keeps what threads of a call print while it runs', async () => {
      const p = await start();
      const c = job('threads', [4]);
      p.call([c]);
      const lines = text((await events.outcome(c.uid)).printed?.stdout)!.split('\n');
      expect(lines.sort()).toEqual(['', 'thread 0', 'thread 1', 'thread 2', 'thread 3']);
    });
  }

  it('leaves the output in the log files when the pool does not ask for it', async () => {
    const p = await start(0);
    const c = job('prints', [9]);
    p.call([c]);
    expect((await events.outcome(c.uid)).printed).toBeUndefined();
    const log = path.join(dir, `${language === 'python' ? 'fworker-python' : 'fworker'}.0.out`);
    await fileContains(log, 'line 2 of 9\n');
  });
});
