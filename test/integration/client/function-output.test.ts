/**
 * What a function call prints is its task's output, in real pilots: framed into the pilot's
 * stream files with the task's uid and attempt, so tmgr.tail, `pilotfish tail`, `pilotfish
 * logs` and GET /v1/tasks/{uid}/output give it, and task.stdout / task.stderr are its tails.
 */
import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FUNCTION_STREAM_FILE } from '../../../src/components/executor/functions/call-output-file';
import { streamDirOf } from '../../../src/lib/stream-cursor';
import { runCli } from '../../support/cli';
import { api, readEvents, finalStates, serveInTempDir, stopServe } from '../../support/serve';
import { fixtures } from '../../support/session-fixture';
import { collect } from '../../support/tail-check';
import { tempDirs } from '../../support/temp-dirs';

const PYTHON = process.env.PF_TEST_PYTHON ?? '/usr/bin/python3';
const pythonUsable = spawnSync(PYTHON, ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0;
if (!pythonUsable) console.warn(`Python tasks skipped: ${PYTHON} has no msgpack`);

const NODE_MODULE = `
const fs = require('node:fs');
exports.prints = (name, n) => {
  for (let i = 0; i < n; i++) console.log(name, 'line', i);
  process.stderr.write(name + ' done\\n');
  return n;
};
exports.quiet = (x) => x;
/** Prints a line per turn; halfway, waits for the other call to be halfway too (a file each). */
exports.meets = async (dir, me, other, n) => {
  for (let i = 0; i < n; i++) {
    console.log(me, i);
    await new Promise((r) => setImmediate(r));
    if (i === n / 2) {
      fs.writeFileSync(dir + '/' + me, '');
      while (!fs.existsSync(dir + '/' + other)) await new Promise((r) => setTimeout(r, 2));
    }
  }
  return me;
};
exports.flaky = () => {
  const attempt = process.env.PF_TASK_ATTEMPT;
  console.log('attempt', attempt);
  console.error('attempt', attempt, 'on stderr');
  if (attempt === '1') throw new Error('the first attempt fails');
  return Number(attempt);
};
`;

const PY_MODULE = `
import sys
def prints(name, n):
    for i in range(n):
        print(name, 'line', i)
    sys.stderr.write(f'{name} done\\n')
    return n
`;

const lines = (name: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${name} line ${i}`);

describe('what function calls print', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-fnout-');

  function modules(): { dir: string; js: string } {
    const dir = temp.make();
    const js = path.join(dir, 'out.js');
    fs.writeFileSync(js, NODE_MODULE);
    fs.writeFileSync(path.join(dir, 'pyout.py'), PY_MODULE);
    return { dir, js };
  }

  it('is each task’s own output, in order, for Node and Python calls; tails set; a quiet call has none', async () => {
    const { dir, js } = modules();
    const fx = await fixture.open({ agent: { python: PYTHON } });
    const node = (uid: string, n: number) => ({
      uid,
      mode: 'function' as const,
      function: { module: js, export: 'prints', args: [uid, n] },
    });
    const py = (uid: string, n: number) => ({
      uid,
      mode: 'function' as const,
      workdir: dir,
      function: { language: 'python' as const, module: 'pyout', export: 'prints', args: [uid, n] },
    });
    const tasks = await fx.tmgr.submitTasks([
      ...Array.from({ length: 20 }, (_, i) => node(`node.${i}`, 1 + i * 10)),
      ...(pythonUsable ? Array.from({ length: 20 }, (_, i) => py(`py.${i}`, 1 + i * 10)) : []),
      { uid: 'quiet', mode: 'function', function: { module: js, export: 'quiet', args: [1] } },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    const quiet = tasks.pop()!;
    for (const [i, t] of tasks.entries()) {
      const n = 1 + (i % 20) * 10;
      expect([t.uid, t.state]).toEqual([t.uid, 'DONE']);
      expect(await collect(fx.tmgr.tail(t.uid))).toEqual(lines(t.uid, n));
      expect(await collect(fx.tmgr.tail(t.uid, { stream: 'stderr' }))).toEqual([`${t.uid} done`]);
      expect(t.stderr).toBe(`${t.uid} done\n`);
      // the tail: the last 2,048 bytes, from a line's start
      const all = `${lines(t.uid, n).join('\n')}\n`;
      if (all.length <= 2048) expect(t.stdout).toBe(all);
      else {
        expect([all.endsWith(t.stdout!), t.stdout!.length <= 2048]).toEqual([true, true]);
        expect(all[all.length - t.stdout!.length - 1]).toBe('\n');
      }
    }
    expect([quiet.state, quiet.stdout, quiet.stderr]).toEqual(['DONE', '', '']);
    expect(await collect(fx.tmgr.tail(quiet.uid))).toEqual([]);
    // one file of the pilot's stream files holds them
    expect(fs.readdirSync(streamDirOf(fx.pilot.sandbox))).toContain(FUNCTION_STREAM_FILE);

    // the CLI reads them from the session directory
    expect(await runCli(['tail', fx.session.uid, 'node.3', '--dir', fx.dir])).toEqual({
      code: 0,
      stderr: '',
      stdout: `${lines('node.3', 31).join('\n')}\n`,
    });
    const logs = await runCli(['logs', fx.session.uid, 'node.1', 'quiet', '--dir', fx.dir]);
    expect(logs).toEqual({
      code: 0,
      stderr: '',
      stdout: lines('node.1', 11)
        .map((l) => `node.1 | ${l}\n`)
        .join(''),
    });
  }, 120_000);

  it('does not mix the output of two calls that run at once in two workers', async () => {
    const { dir, js } = modules();
    const fx = await fixture.open({ cores: 2 });
    // a timeout makes each call hold its core (its worker) alone: they meet halfway, at once
    const meets = (me: string, other: string) => ({
      uid: me,
      mode: 'function' as const,
      timeoutS: 60,
      function: { module: js, export: 'meets', args: [dir, me, other, 400] },
    });
    const [a, b] = await fx.tmgr.submitTasks([meets('a', 'b'), meets('b', 'a')]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect([a!.state, b!.state, a!.result, b!.result]).toEqual(['DONE', 'DONE', 'a', 'b']);
    for (const t of [a!, b!]) {
      const want = Array.from({ length: 400 }, (_, i) => `${t.uid} ${i}`);
      expect(await collect(fx.tmgr.tail(t.uid))).toEqual(want);
    }
  }, 90_000);

  it("shows a retried call's last attempt only", async () => {
    const { js } = modules();
    const fx = await fixture.open();
    const [t] = await fx.tmgr.submitTasks([
      { mode: 'function', retries: 1, function: { module: js, export: 'flaky' } },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect([t!.state, t!.attempt, t!.result]).toEqual(['DONE', 2, 2]);
    expect(await collect(fx.tmgr.tail(t!.uid))).toEqual(['attempt 2']);
    expect(await collect(fx.tmgr.tail(t!.uid, { stream: 'stderr' }))).toEqual([
      'attempt 2 on stderr',
    ]);
    expect([t!.stdout, t!.stderr]).toEqual(['attempt 2\n', 'attempt 2 on stderr\n']);
    // the first attempt's lines are there too, fenced by their attempt
    const file = path.join(streamDirOf(fx.pilot.sandbox), FUNCTION_STREAM_FILE);
    expect(fs.readFileSync(file, 'utf8')).toContain('attempt 1\n');
  }, 60_000);

  it('is served by GET /v1/tasks/{uid}/output', async () => {
    const { js } = modules();
    const { dir, s } = await serveInTempDir('pf-fnout-serve-');
    try {
      const task = {
        uid: 'printer',
        mode: 'function',
        function: { module: js, export: 'prints', args: ['printer', 3] },
      };
      expect((await api(s, 'POST', '/v1/tasks', { tasks: [task] })).status).toBe(201);
      await readEvents(s, { until: (evs) => finalStates(evs).has('printer') });
      const res = await fetch(`${s.url}/v1/tasks/printer/output`, {
        headers: { authorization: `Bearer ${s.token}` },
      });
      expect([res.status, await res.text()]).toEqual([200, `${lines('printer', 3).join('\n')}\n`]);
    } finally {
      await stopServe(s, dir);
    }
  }, 90_000);
});
