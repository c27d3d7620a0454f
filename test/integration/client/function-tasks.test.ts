import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fixtures, openFixture } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';

/** Function tasks: calls in the pilot's warm workers, real worker processes, real modules. */
describe('function tasks', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-fn-');

  /** Writes a CommonJS module into a fresh directory; returns its path. */
  const moduleFile = (source: string): string => {
    const file = path.join(temp.make(), 'tasks.js');
    fs.writeFileSync(file, source);
    return file;
  };

  /** The pids of function workers (their command line names the worker's script). */
  const workerPids = (): number[] =>
    fs
      .readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return fs
            .readFileSync(`/proc/${d}/cmdline`, 'utf8')
            .includes('executor/functions/worker/main');
        } catch {
          return false;
        }
      })
      .map(Number);

  it('returns the values of 10,000 calls, sync and async, each to its task', async () => {
    const mod = moduleFile(`
      exports.square = (x) => x * x;
      exports.later = async (s) => ({ echoed: s, env: process.env.PF_TASK_ID });
    `);
    const fx = await fixture.open();
    const tasks = await fx.tmgr.submitTasks([
      ...Array.from({ length: 9_999 }, (_, i) => ({
        mode: 'function' as const,
        function: { module: mod, export: 'square', args: [i] },
      })),
      { uid: 'async', mode: 'function', function: { module: mod, export: 'later', args: ['hi'] } },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 120_000 });
    tasks.forEach((t, i) => {
      expect([t.state, t.reason]).toEqual(['DONE', undefined]);
      if (i < 9_999) expect(t.result).toBe(i * i);
    });
    expect(tasks.at(-1)!.result).toEqual({ echoed: 'hi', env: 'async' });
  }, 180_000);

  it('fails a throwing, a hanging, a crashing and a non-importable function, each with a readable reason; the pool keeps its size', async () => {
    const mod = moduleFile(`
      exports.throws = () => { throw new TypeError('no such sample'); };
      exports.hangs = () => new Promise(() => {});
      exports.spins = () => { for (;;) {} };
      exports.aborts = () => process.abort();
      exports.ok = () => 'still here';
    `);
    const broken = moduleFile(`throw new Error('cannot load me');`);
    const fx = await fixture.open({ cores: 2 });
    const fn = (uid: string, module: string, exp?: string, more = {}) => ({
      uid,
      mode: 'function' as const,
      function: { module, ...(exp !== undefined ? { export: exp } : {}) },
      ...more,
    });
    const tasks = await fx.tmgr.submitTasks([
      fn('throws', mod, 'throws'),
      fn('hangs', mod, 'hangs', { timeoutS: 1 }),
      fn('spins', mod, 'spins', { timeoutS: 1 }),
      fn('aborts', mod, 'aborts'),
      fn('broken1', broken),
      fn('broken2', broken),
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    const byUid = new Map(tasks.map((t) => [t.uid, t]));
    const why = (uid: string) => [byUid.get(uid)!.state, byUid.get(uid)!.reason?.code];
    expect(why('throws')).toEqual(['FAILED', 'E_FUNCTION_THREW']);
    expect(byUid.get('throws')!.reason?.message).toContain('TypeError: no such sample');
    expect(String((byUid.get('throws')!.reason?.detail as { stack?: string }).stack)).toContain(
      'tasks.js',
    );
    expect(why('hangs')).toEqual(['FAILED', 'E_TASK_TIMEOUT']);
    expect(why('spins')).toEqual(['FAILED', 'E_TASK_TIMEOUT']);
    expect(why('aborts')).toEqual(['FAILED', 'E_WORKER_DIED']);
    for (const uid of ['broken1', 'broken2']) {
      expect(why(uid)).toEqual(['FAILED', 'E_FUNCTION_IMPORT']);
      expect(byUid.get(uid)!.reason?.message).toContain('cannot load me');
    }
    // the workers that were killed or died were replaced: the pool still serves both slots
    const after = await fx.tmgr.submitTasks([fn('ok1', mod, 'ok'), fn('ok2', mod, 'ok')]);
    await fx.tmgr.waitTasks({ uids: after.map((t) => t.uid), timeoutMs: 30_000 });
    for (const t of after) expect([t.state, t.result]).toEqual(['DONE', 'still here']);
    expect(workerPids().length).toBeGreaterThanOrEqual(2);
  }, 90_000);

  it('cancels a function task in the middle of a long call', async () => {
    const mod = moduleFile(`exports.long = () => new Promise((r) => setTimeout(r, 60_000));`);
    const fx = await fixture.open();
    const [t] = await fx.tmgr.submitTasks([
      { mode: 'function', function: { module: mod, export: 'long' } },
    ]);
    await fx.tmgr.waitTasks({ uids: [t!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 30_000 });
    await fx.tmgr.cancelTasks([t!.uid]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect([t!.state, t!.reason?.code]).toEqual(['CANCELED', 'E_CANCELED']);
  }, 60_000);

  it('retries a throwing function and leaves no worker behind when the session closes', async () => {
    const flag = path.join(temp.make(), 'tried');
    const mod = moduleFile(`
      const fs = require('node:fs');
      exports.flaky = (flag) => {
        if (!fs.existsSync(flag)) { fs.writeFileSync(flag, ''); throw new Error('first time'); }
        return Number(process.env.PF_TASK_ATTEMPT);
      };
    `);
    const fx = await openFixture();
    const [t] = await fx.tmgr.submitTasks([
      { mode: 'function', function: { module: mod, export: 'flaky', args: [flag] }, retries: 1 },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect([t!.state, t!.result, t!.retried]).toEqual(['DONE', 2, 1]);
    expect(workerPids().length).toBeGreaterThan(0);
    await fx.close();
    expect(workerPids()).toEqual([]);
  }, 60_000);
});
