import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const CLI = path.resolve(__dirname, '../../../dist/src/cli/main.js');

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

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
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toMatch(/DONE\s+2/);
  }, 60_000);

  it('rejects an invalid workload with the JSON path, exit 2', async () => {
    const file = path.join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ tasks: [{ executable: '/bin/true', ranks: 0 }] }));
    const r = await run(['run', file, '--dir', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('/tasks/0/ranks must be >= 1');
  });
});
