import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { withTimeout } from '../../../src/lib/deferred';
import { decodeFrames } from '../../../src/lib/output-frames';
import { waitForExit } from '../../support/processes';

describe('an agent whose client dies', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-orphan-'));
  const children: number[] = [];
  afterAll(() => {
    // a failed check must not leave the client, its agent or the task running
    for (const pid of children) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['stream', 'files'])(
    "output '%s': kills its tasks and exits by itself once its client timeout passes without a heartbeat",
    async (output) => {
      const client = spawn(
        process.execPath,
        [path.join(__dirname, '../../support/orphan-client.js'), dir, output],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      if (client.pid !== undefined) children.push(client.pid);
      const lines = createInterface({ input: client.stdout });
      const first = await withTimeout(
        new Promise<string>((resolve) => lines.once('line', resolve)),
        15_000,
        'orphan client report',
      );
      const report = JSON.parse(first) as {
        agent: number;
        sandbox: string;
        uid: string;
        pilotSandbox: string;
      };
      const { agent, sandbox, uid, pilotSandbox } = report;
      children.push(agent);
      // every task works in a directory of its own, whatever its output
      expect(sandbox).toBe(path.join(pilotSandbox, uid));
      const pidFile = path.join(sandbox, 'pid');
      expect(existsSync(pidFile)).toBe(true);
      const task = Number(readFileSync(pidFile, 'utf8').trim());
      children.push(task);
      const exited = new Promise((resolve) => client.once('exit', resolve));
      client.kill('SIGKILL');
      await exited;
      await waitForExit(agent, 10_000);
      await waitForExit(task, 5_000);
      // what the task printed outlives them: its file, or its frames, ended by its end frame
      if (output === 'files') {
        expect(readFileSync(path.join(sandbox, 'stdout'), 'utf8')).toBe('started\n');
      } else {
        const streams = path.join(pilotSandbox, 'output');
        const frames = readdirSync(streams)
          .flatMap((f) => decodeFrames(readFileSync(path.join(streams, f)), 0).frames)
          .filter((f) => f.uid === uid)
          .map((f) => [f.kind, f.data.toString()]);
        expect(frames).toEqual([
          ['stdout', 'started\n'],
          ['end', ''],
        ]);
      }
    },
    30_000,
  );
});
