import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { onPath } from '../../../src/components/executor/functions/worker-process';
import { fixtures } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';

/** An interpreter with msgpack (python3-msgpack: scripts/system-deps.sh). */
const PYTHON = process.env.PF_TEST_PYTHON ?? '/usr/bin/python3';
const hasMsgpack = (python: string): boolean =>
  spawnSync(python, ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0;
const usable = hasMsgpack(PYTHON);
const without = [onPath('python3'), path.join(os.homedir(), '.pyenv/shims/python3')].find(
  (p) => p !== undefined && fs.existsSync(p) && !hasMsgpack(p),
);
if (!usable) console.warn(`skipped: ${PYTHON} has no msgpack (bash scripts/system-deps.sh)`);
if (without === undefined) console.warn('start failure test skipped: every python3 has msgpack');

/** Function tasks of language 'python': real Python workers in a real pilot. */
(usable ? describe : describe.skip)('Python function tasks', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-fnpy-');

  it('returns a Python function’s result, and fails a raise with its traceback; Node tasks beside them', async () => {
    const workdir = temp.make();
    fs.mkdirSync(path.join(workdir, 'scoring'));
    fs.writeFileSync(path.join(workdir, 'scoring', '__init__.py'), '');
    fs.writeFileSync(
      path.join(workdir, 'scoring', 'model.py'),
      [
        'import asyncio, os',
        'def score(x):',
        "    return {'x': x, 'score': x * 0.5, 'task': os.environ['PF_TASK_ID']}",
        'async def later(s):',
        '    await asyncio.sleep(0)',
        '    return [s, s]',
        'def fails(n):',
        "    raise ValueError(f'bad sample {n}')",
        '',
      ].join('\n'),
    );
    const js = path.join(workdir, 'tasks.js');
    fs.writeFileSync(js, 'exports.twice = (x) => 2 * x;\n');
    const fx = await fixture.open({ agent: { python: PYTHON } });
    const py = (uid: string, exp: string, args: unknown[]) => ({
      uid,
      mode: 'function' as const,
      workdir,
      function: { language: 'python' as const, module: 'scoring.model', export: exp, args },
    });
    const tasks = await fx.tmgr.submitTasks([
      ...Array.from({ length: 200 }, (_, i) => py(`py.${i}`, 'score', [i])),
      py('async', 'later', ['hi']),
      py('fails', 'fails', [7]),
      { uid: 'node', mode: 'function', function: { module: js, export: 'twice', args: [21] } },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    const byUid = new Map(tasks.map((t) => [t.uid, t]));
    for (let i = 0; i < 200; i++) {
      const t = byUid.get(`py.${i}`)!;
      expect([t.state, t.result]).toEqual(['DONE', { x: i, score: i * 0.5, task: `py.${i}` }]);
    }
    expect(byUid.get('async')!.result).toEqual(['hi', 'hi']);
    expect(byUid.get('node')!.result).toBe(42);
    const failed = byUid.get('fails')!;
    expect([failed.state, failed.reason?.code]).toEqual(['FAILED', 'E_FUNCTION_THREW']);
    expect(failed.reason?.message).toBe('scoring.model#fails threw ValueError: bad sample 7');
    const stack = String((failed.reason?.detail as { stack?: string }).stack);
    expect(stack).toMatch(/^Traceback \(most recent call last\):/);
    expect(stack).toContain(`${path.join(workdir, 'scoring', 'model.py')}", line 8, in fails`);
    expect(stack).toContain('ValueError: bad sample 7');
    // both languages' workers print to their own log files in the pilot sandbox
    const sandbox = fx.pilot.sandbox;
    expect(fs.existsSync(path.join(sandbox, 'fworker-python.0.err'))).toBe(true);
    expect(fs.existsSync(path.join(sandbox, 'fworker.0.err'))).toBe(true);
  }, 90_000);

  (without === undefined ? it.skip : it)(
    'fails the task with a clear reason when agent.python lacks msgpack',
    async () => {
      const fx = await fixture.open({ agent: { python: without! } });
      const [t] = await fx.tmgr.submitTasks([
        {
          mode: 'function',
          function: { language: 'python', module: 'json', export: 'dumps', args: [1] },
        },
      ]);
      await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
      expect([t!.state, t!.reason?.code]).toEqual(['FAILED', 'E_WORKER_START']);
      expect(t!.reason?.message).toContain('python function workers cannot start');
      expect(t!.reason?.message).toContain("'msgpack' cannot be imported");
      expect(t!.reason?.message).toContain('pip install msgpack');
    },
    60_000,
  );
});
