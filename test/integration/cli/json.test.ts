import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../../support/cli';

/** `--json` of run, tail and timeline: one JSON document (tail: one per line) on stdout. */
describe('pilotfish --json', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-cli-json-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('run prints its summary, tail its lines and timeline what it wrote, as JSON', async () => {
    const file = path.join(dir, 'w.json');
    writeFileSync(
      file,
      JSON.stringify({
        tasks: [
          { name: 'hello', executable: '/bin/sh', arguments: ['-c', 'echo one; echo two'] },
          { name: 'bad', executable: '/bin/false' },
        ],
      }),
    );
    const run = await runCli(['run', file, '--dir', dir, '--json']);
    expect(run.code).toBe(1);
    const summary = JSON.parse(run.stdout) as {
      session: string;
      tasks: number;
      states: Record<string, number>;
      failures: { task: string; code: string }[];
    };
    expect(summary).toMatchObject({ tasks: 2, states: { DONE: 1, FAILED: 1 } });
    expect(summary.failures).toEqual([
      { task: 'bad', code: 'E_EXIT_CODE', message: 'task exited with code 1' },
    ]);

    const tail = await runCli(['tail', summary.session, 'task.000000', '--dir', dir, '--json']);
    expect(tail.code).toBe(0);
    expect(
      tail.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([
      { task: 'task.000000', stream: 'stdout', line: 'one' },
      { task: 'task.000000', stream: 'stdout', line: 'two' },
    ]);

    const out = path.join(dir, 't.html');
    const tl = await runCli(['timeline', summary.session, '--dir', dir, '-o', out, '--json']);
    expect(tl.code).toBe(0);
    expect(JSON.parse(tl.stdout)).toEqual({
      file: out,
      tasks: 2,
      pilots: 1,
      bytes: expect.any(Number),
    });
  }, 60_000);
});
