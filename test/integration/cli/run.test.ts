import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SESSION_LINE, runCli as run } from '../../support/cli';

describe('pilotfish run', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs a workload file and prints a summary', async () => {
    const file = path.join(dir, 'ok.json');
    writeFileSync(
      file,
      JSON.stringify({
        pilots: [{ resource: 'local', cores: 2 }],
        tasks: [
          ...Array.from({ length: 30 }, () => ({ executable: '/bin/true' })),
          { executable: '/bin/false' },
        ],
      }),
    );
    const r = await run(['run', file, '--dir', dir]);
    expect(r.code).toBe(1); // one task failed
    expect(r.stdout).toMatch(/31 tasks in/);
    expect(r.stdout).toMatch(/DONE\s+30/);
    expect(r.stdout).toMatch(/FAILED\s+1/);
    expect(r.stdout).toContain('task exited with code 1');
  }, 30_000);

  it('--json lists every task with state, reason, exit code and result; the rate is what the run did', async () => {
    const mod = path.join(dir, 'sum.js');
    writeFileSync(mod, 'exports.sum = (a, b) => a + b;\n');
    const file = path.join(dir, 'listed.json');
    writeFileSync(
      file,
      JSON.stringify({
        pilots: [{ resource: 'local', cores: 2 }],
        tasks: [
          { uid: 'ok', executable: '/bin/true' },
          { uid: 'bad', name: 'bad', executable: '/bin/false' },
          { uid: 'fn', mode: 'function', function: { module: mod, export: 'sum', args: [2, 3] } },
          { uid: 'slow', executable: '/bin/sleep', arguments: ['1'] },
        ],
      }),
    );
    const r = await run(['run', file, '--json', '--dir', dir]);
    expect(r.code).toBe(1);
    const s = JSON.parse(r.stdout) as {
      tasks: number;
      seconds: number;
      endedInRun: number;
      tasksPerS: number;
      taskList: unknown[];
    };
    expect(s.taskList).toEqual([
      { uid: 'ok', state: 'DONE', exitCode: 0, signal: null },
      {
        uid: 'bad',
        name: 'bad',
        state: 'FAILED',
        exitCode: 1,
        signal: null,
        reason: expect.objectContaining({ code: 'E_EXIT_CODE' }),
      },
      expect.objectContaining({ uid: 'fn', state: 'DONE', result: 5 }),
      { uid: 'slow', state: 'DONE', exitCode: 0, signal: null },
    ]);
    // 4 tasks in over a second: a rate below 4 per second, not rounded to 0
    expect(s.endedInRun).toBe(4);
    expect(s.seconds).toBeGreaterThan(1);
    expect(s.tasksPerS).toBeCloseTo(4 / s.seconds, 6);
    const text = await run(['run', file, '--dir', dir]);
    const [, rate] = /^session \S+: 4 tasks in [\d.]+ s \(([\d.]+) tasks\/s\)$/m.exec(text.stdout)!;
    expect(Number(rate)).toBeGreaterThan(0);
    expect(Number(rate)).toBeLessThan(4);
  }, 60_000);

  it('refuses a task too large for a message to its agent, naming it, instead of never ending: exit 2', async () => {
    const file = path.join(dir, 'huge.json');
    const arg = 'x'.repeat(100 * 1024);
    writeFileSync(
      file,
      JSON.stringify({
        pilots: [{ resource: 'local', cores: 1 }],
        tasks: [{ executable: '/bin/echo', arguments: Array.from({ length: 700 }, () => arg) }],
      }),
    );
    const r = await run(['run', file, '--dir', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/\/0\/arguments makes the task [\d,]+ bytes encoded/);
    expect(r.stdout).toBe('');
  }, 60_000);

  it('stops the services of a workload once its other tasks are done: every task DONE, exit 0', async () => {
    const file = path.join(dir, 'svc.json');
    const server = `require('node:http').createServer((q, r) => r.end('ok'))
      .listen(Number(process.env.PF_PORT));`;
    writeFileSync(
      file,
      JSON.stringify({
        pilots: [{ resource: 'local', cores: 2 }],
        tasks: [
          {
            uid: 'web',
            mode: 'service',
            executable: process.execPath,
            arguments: ['-e', server],
            service: { port: 'auto', ready: { http: '/' } },
          },
          {
            executable: '/bin/sh',
            arguments: ['-c', 'test -n "$PF_SERVICE_WEB"'],
            after: [{ task: 'web', on: 'ready' }],
          },
        ],
      }),
    );
    const r = await run(['run', file, '--dir', dir]);
    expect([r.code, r.stderr]).toEqual([0, expect.stringMatching(SESSION_LINE)]);
    expect(r.stdout).toMatch(/DONE\s+2/);
  }, 60_000);

  it('rejects an invalid workload with the JSON path, exit 2', async () => {
    const file = path.join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ tasks: [{ executable: '/bin/true', ranks: 0 }] }));
    const r = await run(['run', file, '--dir', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('/tasks/0/ranks must be >= 1');
  });

  it('lists failures by task name, with the uid where names repeat', async () => {
    const file = path.join(dir, 'names.json');
    writeFileSync(
      file,
      JSON.stringify({
        pilots: [{ resource: 'local', cores: 2 }],
        tasks: [
          { uid: 'u-lone', name: 'lonely', executable: '/bin/false' },
          { uid: 'u-twin1', name: 'twin', executable: '/bin/false' },
          { uid: 'u-twin2', name: 'twin', executable: '/bin/false' },
          { uid: 'u-anon', executable: '/bin/false' },
        ],
      }),
    );
    const r = await run(['run', file, '--dir', dir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^ {2}lonely: E_\w+: task exited with code 1$/m);
    expect(r.stdout).toMatch(/^ {2}twin \(u-twin1\): E_\w+: /m);
    expect(r.stdout).toMatch(/^ {2}twin \(u-twin2\): E_\w+: /m);
    expect(r.stdout).toMatch(/^ {2}u-anon: E_\w+: /m);
  }, 30_000);

  it('on the workload timeout prints what ended and what did not, exit 3', async () => {
    const file = path.join(dir, 'timeout.json');
    writeFileSync(
      file,
      JSON.stringify({
        pilots: [{ resource: 'local', cores: 1 }],
        timeoutS: 2,
        tasks: [
          { name: 'slow', executable: '/bin/sleep', arguments: ['600'] },
          { name: 'queued', executable: '/bin/true' }, // waits for the one core
        ],
      }),
    );
    const r = await run(['run', file, '--dir', dir]);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/timed out after 2 s: 0 of 2 tasks ended/);
    expect(r.stdout).toMatch(/not ended:\n {2}slow \(\w+\)\n {2}queued \(\w+\)/);
  }, 60_000);
});
