/**
 * What a function does to its worker's environment and directory does not reach the next call,
 * in both workers (Node: dist/.../functions/worker/main.js, `npm run build` first; Python:
 * workers/python_worker.py with PF_TEST_PYTHON or /usr/bin/python3, skipped without msgpack).
 * The same calls, the same answers.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  FunctionPool,
  type FunctionCallJob,
  type WorkerLanguage,
} from '../../../../../src/components/executor/functions/function-pool';
import { silentLogger } from '../../../../../src/lib/logger';
import { PoolEvents } from './function-pool-fixtures';

const PYTHON = process.env.PF_TEST_PYTHON ?? '/usr/bin/python3';
const python = spawnSync(PYTHON, ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0;
if (!python) console.warn(`Python cases skipped: ${PYTHON} has no msgpack`);

const FILES: Record<string, string> = {
  'node/fns.js': `
    const { execFileSync } = require('node:child_process');
    exports.env = (...names) => names.map((n) => process.env[n] ?? null);
    exports.cwd = () => process.cwd();
    exports.meddle = (sub) => {
      process.env.NUM = 1; // process.env keeps strings
      delete process.env.GONE;
      process.env.SHARED = 'changed';
      process.chdir(sub);
      return [process.env.NUM, 'GONE' in process.env, Object.keys(process.env).includes('PF_TASK_ID')];
    };
    exports.child = () =>
      execFileSync('/bin/sh', ['-c', 'echo "$PF_TASK_ID $SHARED"'], { encoding: 'utf8' }).trim();
    exports.replace = () => { process.env = { ONLY: 'x' }; };
  `,
  'node/top.js': `
    const seen = [process.env.PF_TASK_ID ?? null, process.cwd()];
    exports.seen = () => seen;
  `,
  'pfenv/__init__.py': '',
  'pfenv/fns.py': `
import os, subprocess

def env(*names):
    return [os.environ.get(n) for n in names]

def cwd():
    return os.getcwd()

def meddle(sub):
    os.environ['NUM'] = '1'
    del os.environ['GONE']
    os.environ['SHARED'] = 'changed'
    os.chdir(sub)
    return [os.environ['NUM'], 'GONE' in os.environ, 'PF_TASK_ID' in list(os.environ)]

def child():
    sh = subprocess.run(['/bin/sh', '-c', 'echo "$PF_TASK_ID $SHARED"'], capture_output=True, text=True)
    return sh.stdout.strip()

def replace():
    os.environ = {'ONLY': 'x'}
`,
  'pfenv/top.py': `
import os
SEEN = [os.environ.get('PF_TASK_ID'), os.getcwd()]

def seen():
    return SEEN
`,
};

const cases: [WorkerLanguage, boolean][] = [
  ['node', true],
  ['python', python],
];

describe.each(cases)('the %s worker', (language, usable) => {
  let dir: string;
  let sub: string;
  let pool: FunctionPool | undefined;
  let events: PoolEvents;
  let n = 0;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-fenv-'));
    sub = path.join(dir, 'sub');
    fs.mkdirSync(sub);
    for (const [name, text] of Object.entries(FILES)) {
      fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      fs.writeFileSync(path.join(dir, name), text);
    }
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  async function start(): Promise<FunctionPool> {
    events = new PoolEvents();
    pool = await FunctionPool.start({
      workers: 1,
      language,
      python: PYTHON,
      env: { SHARED: 'base' },
      logger: silentLogger,
      handlers: events.handlers,
      logDir: dir,
      killGraceMs: 2_000,
    });
    return pool;
  }

  /** A call of `fn` in the fns module (or `top`), from `dir`, with a fresh uid. */
  function job(fn: string, args: unknown[] = [], more: Partial<FunctionCallJob> = {}) {
    const file = fn === 'seen' ? 'top' : 'fns';
    // files, found from any directory
    const module =
      language === 'node'
        ? path.join(dir, 'node', `${file}.js`)
        : path.join(dir, 'pfenv', `${file}.py`);
    const j: FunctionCallJob = { uid: `env.${++n}`, module, export: fn, args, env: {}, worker: 0 };
    j.cwd = dir;
    return Object.assign(j, more);
  }

  const maybe = usable ? it : it.skip;

  maybe(
    'undoes what a function did to its environment and directory, in a bulk and after',
    async () => {
      const p = await start();
      const env = { PF_TASK_ID: '1', GONE: 'g', SHARED: 's' };
      const meddle = job('meddle', [sub], { env });
      // the same environment as the call before: nothing of it is sent, the worker sets it again
      const same = job('env', ['GONE', 'SHARED', 'NUM'], { env });
      const where = job('cwd', [], { env });
      const child = job('child', [], { env: { ...env, PF_TASK_ID: '2' } });
      p.call([meddle, same, where, child]);
      expect(await events.value(meddle.uid)).toEqual(['1', false, true]);
      // NUM is no call's: the function's to clean up
      expect(await events.value(same.uid)).toEqual(['g', 's', '1']);
      expect(await events.value(where.uid)).toBe(dir);
      expect(await events.value(child.uid)).toBe('2 s'); // a child gets the call's environment
      const again = job('meddle', [sub], { env });
      p.call([again]);
      await events.value(again.uid);
      const after = job('env', ['GONE', 'SHARED'], { env });
      const there = job('cwd', [], { env });
      p.call([after, there]);
      expect(await events.value(after.uid)).toEqual(['g', 's']);
      expect(await events.value(there.uid)).toBe(dir);
    },
  );

  maybe('sets the environment again after a function replaced its environment object', async () => {
    const p = await start();
    const replace = job('replace', [], { env: { PF_TASK_ID: '1' } });
    const after = job('env', ['PF_TASK_ID', 'SHARED', 'ONLY'], { env: { PF_TASK_ID: '2' } });
    p.call([replace, after]);
    await events.outcome(replace.uid);
    expect(await events.value(after.uid)).toEqual(['2', 'base', null]);
  });

  maybe(
    'fails a call whose directory cannot be entered; the next ones run where they ask',
    async () => {
      const p = await start();
      const there = job('cwd', [], { cwd: sub });
      const missing = job('cwd', [], { cwd: path.join(dir, 'no-such-dir') });
      const home = job('cwd');
      delete home.cwd; // the worker's own: where the agent runs
      const back = job('cwd', [], { cwd: sub });
      p.call([there, missing, home, back]);
      expect(await events.value(there.uid)).toBe(sub);
      expect(await events.outcome(missing.uid)).toMatchObject({
        ok: false,
        phase: 'call',
        error: { code: 'ENOENT' },
      });
      expect(await events.value(home.uid)).toBe(process.cwd());
      expect(await events.value(back.uid)).toBe(sub);
    },
  );

  maybe('imports a module in the environment and directory of the call that names it', async () => {
    const p = await start();
    const before = job('env', ['PF_TASK_ID'], { env: { PF_TASK_ID: 'before' } });
    const first = job('seen', [], { env: { PF_TASK_ID: 'first' }, cwd: sub });
    const second = job('seen', [], { env: { PF_TASK_ID: 'second' } });
    p.call([before, first, second]);
    expect(await events.value(before.uid)).toEqual(['before']);
    expect(await events.value(first.uid)).toEqual(['first', sub]);
    expect(await events.value(second.uid)).toEqual(['first', sub]); // imported once
  });
});
