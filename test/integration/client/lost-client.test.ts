import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { withTimeout } from '../../../src/lib/deferred';
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

  it('kills its tasks and exits by itself once its client timeout passes without a heartbeat', async () => {
    const client = spawn(
      process.execPath,
      [path.join(__dirname, '../../support/orphan-client.js'), dir],
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
    const { agent, sandbox } = JSON.parse(first) as { agent: number; sandbox: string };
    children.push(agent);
    const pidFile = path.join(sandbox, 'pid');
    expect(existsSync(pidFile)).toBe(true);
    const task = Number(readFileSync(pidFile, 'utf8').trim());
    children.push(task);
    const exited = new Promise((resolve) => client.once('exit', resolve));
    client.kill('SIGKILL');
    await exited;
    await waitForExit(agent, 10_000);
    await waitForExit(task, 5_000);
  }, 30_000);
});
