import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { FunctionCallError, UsageError, ValidationError, functionModule } from '../../../src';
import type * as Scoring from '../../support/scoring-module';
import { fixtures } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';

/** The JavaScript twin of test/support/scoring-module.ts, plus what the tests call besides. */
const SCORING_JS = `
exports.score = async (pose) => ({ energy: pose.x * pose.y });
exports.label = (n, unit) => String(n) + (unit ?? '') + ':' + process.env.PF_TASK_ID;
exports.VERSION = '1.0';
exports.checked = (n) => { if (n % 50 === 7) throw new RangeError('bad sample ' + n); return n; };
exports.hangs = () => new Promise(() => {});
`;

/** Typed by the TypeScript module, as a user's script would be. */
type Calls = typeof Scoring & {
  checked(n: number): number;
  hangs(): Promise<never>;
};

/** Function handles over a real local pilot: real workers, real modules, real failures. */
describe('function handles', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-fh-');

  const moduleFile = (): string => {
    const file = path.join(temp.make(), 'scoring.js');
    fs.writeFileSync(file, SCORING_JS);
    return file;
  };

  it('calls a function and maps a sweep of 200, each result in its place', async () => {
    const fx = await fixture.open();
    const scoring = functionModule<Calls>(fx.tmgr, pathToFileURL(moduleFile()));
    const score = scoring.handle('score');
    const label = scoring.handle('label', { name: 'labels' });
    await expect(score.call({ x: 3, y: 4 })).resolves.toEqual({ energy: 12 });
    const one = await label.call(5, 'm');
    expect(one).toMatch(/^5m:task\.\d+$/);

    const poses = Array.from({ length: 200 }, (_, i) => ({ x: i, y: 2 }));
    const before = fx.tmgr.list().length;
    const energies = await score.map(poses.map((p) => [p]));
    expect(energies).toEqual(poses.map((p) => ({ energy: p.x * 2 })));
    // one task per call, in one bulk: their uids follow each other in submission order
    const swept = fx.tmgr.list().slice(before);
    expect(swept).toHaveLength(200);
    expect(new Set(swept.map((t) => t.description.function?.export))).toEqual(new Set(['score']));
    expect(fx.tmgr.list().filter((t) => t.description.name === 'labels')).toHaveLength(1);
  }, 60_000);

  it('maps a sweep of 10,000 in one bulk, each call waited on by its own task', async () => {
    const fx = await fixture.open();
    const label = functionModule<Calls>(fx.tmgr, moduleFile()).handle('label');
    // ~2.5 s on the 2-core box; a wait that visited every call's waiter per state would be O(n²)
    const labels = await label.map(Array.from({ length: 10_000 }, (_, i): [number] => [i]));
    labels.forEach((l, i) => expect(l.startsWith(`${i}:task.`)).toBe(true));
    expect(new Set(labels).size).toBe(10_000);
  }, 180_000);

  it('rejects a call whose function throws with its reason, and a map at its first failure', async () => {
    const fx = await fixture.open();
    const checked = functionModule<Calls>(fx.tmgr, moduleFile()).handle('checked');
    const e = await checked.call(7).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(FunctionCallError);
    const err = e as FunctionCallError;
    expect([err.code, err.state, err.reason?.code, err.index]).toEqual([
      'E_FUNCTION_CALL',
      'FAILED',
      'E_FUNCTION_THREW',
      undefined,
    ]);
    expect(err.reason?.message).toContain('RangeError: bad sample 7');
    expect(err.message).toMatch(
      /^checked ended FAILED in task task\.\d+: E_FUNCTION_THREW: \/.*\/scoring\.js#checked threw RangeError: bad sample 7$/,
    );
    expect(fx.tmgr.get(err.task)?.state).toBe('FAILED');

    const sweep = Array.from({ length: 100 }, (_, i): [number] => [i]);
    const mapped = await checked.map(sweep).catch((x: unknown) => x);
    expect(mapped).toBeInstanceOf(FunctionCallError);
    expect([7, 57]).toContain((mapped as FunctionCallError).index);

    const settled = await checked.mapSettled(sweep);
    expect(settled).toHaveLength(100);
    settled.forEach((s, i) => {
      if (i % 50 === 7) {
        expect(s).toMatchObject({
          status: 'rejected',
          reason: { index: i, reason: { code: 'E_FUNCTION_THREW' } },
        });
      } else {
        expect(s).toEqual({ status: 'fulfilled', value: i, task: expect.any(String) });
      }
    });
  }, 60_000);

  it('refuses an argument that cannot travel before anything is submitted', async () => {
    const fx = await fixture.open();
    const scoring = functionModule<Calls>(fx.tmgr, moduleFile());
    const label = scoring.handle('label');
    /** What a script may pass past the types (an any, a cast). */
    const sneaky = <T>(v: unknown): T => v as T;
    const refused = label.call(sneaky<number>({ items: [0, 1, 2, () => 3] }));
    await expect(refused).rejects.toThrow(ValidationError);
    await expect(refused).rejects.toThrow(
      'label: args[0].items[3] must be JSON data (a function is not)',
    );
    const mapRefused = label.map([
      [1],
      [sneaky<number>(new Map())],
      [2, sneaky<string>(Symbol('s'))],
    ]);
    await expect(mapRefused).rejects.toMatchObject({
      code: 'E_VALIDATION',
      issues: [
        { path: '/1/0', message: 'must be JSON data (a Map is not; bytes and valid dates are)' },
        { path: '/2/1', message: 'must be JSON data (a symbol is not)' },
      ],
    });
    expect(fx.tmgr.list()).toEqual([]);
    // and a module or an option a handle cannot take, when it is made
    expect(() => functionModule(fx.tmgr, 'https://example.org/scoring.js')).toThrow(
      /must be a file: URL .*: https: URLs are not loaded/,
    );
    expect(() => scoring.handle('label', { coresPerRank: 0 })).toThrow(
      'invalid options of label: /coresPerRank must be >= 1',
    );
    expect(fx.tmgr.list()).toEqual([]);
  }, 30_000);

  it('rejects a call still running when its session closes', async () => {
    const fx = await fixture.open();
    const hangs = functionModule<Calls>(fx.tmgr, moduleFile()).handle('hangs');
    const pending = hangs.call();
    const outcome = pending.catch((e: unknown) => e);
    const running = await fx.tmgr.waitTasks({ states: ['AGENT_EXECUTING'], timeoutMs: 30_000 });
    expect(running).toHaveLength(1);
    await fx.close();
    const e = await outcome;
    expect(e).toBeInstanceOf(UsageError);
    expect((e as UsageError).message).toBe(
      `session ${fx.session.uid} closed before the call ended`,
    );
  }, 60_000);
});

/** An interpreter with msgpack (python3-msgpack: scripts/system-deps.sh). */
const PYTHON = process.env.PF_TEST_PYTHON ?? '/usr/bin/python3';
const usable = spawnSync(PYTHON, ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0;
if (!usable) console.warn(`skipped: ${PYTHON} has no msgpack (bash scripts/system-deps.sh)`);

(usable ? describe : describe.skip)('function handles of Python', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-fhpy-');

  it('calls a Python module by name, typed by the signature its script declares', async () => {
    const workdir = temp.make();
    fs.writeFileSync(
      path.join(workdir, 'calc.py'),
      "def add(a, b):\n    return a + b\ndef fails(n):\n    raise ValueError(f'no {n}')\n",
    );
    const fx = await fixture.open({ agent: { python: PYTHON } });
    const calc = functionModule<{ add(a: number, b: number): number; fails(n: number): never }>(
      fx.tmgr,
      'calc',
      { language: 'python', workdir },
    );
    await expect(
      calc.handle('add').map([
        [1, 2],
        [3, 4],
      ]),
    ).resolves.toEqual([3, 7]);
    await expect(calc.handle('fails').call(3)).rejects.toMatchObject({
      code: 'E_FUNCTION_CALL',
      reason: { code: 'E_FUNCTION_THREW', message: expect.stringContaining('ValueError: no 3') },
    });
  }, 60_000);
});
