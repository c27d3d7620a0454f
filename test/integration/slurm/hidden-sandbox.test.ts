import { afterEach, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { withTimeout } from '../../../src/lib/deferred';
import { agentTrace, clientChild, killAgents, type ClientChild } from '../../support/client-child';
import { CLI, type CliResult } from '../../support/cli';
import { closedGate, type FlockGate } from '../../support/flock-gate';
import { describeSlurm, slurmCommand, slurmEnv } from '../../support/slurm';
import { tempDirs } from '../../support/temp-dirs';

const CHILD = path.resolve(__dirname, '../../support/hidden-sandbox-client.js');
const PAD = '.'.repeat(48);
const LINES = 12_000;
const expected = Array.from(
  { length: LINES },
  (_, i) => `line ${String(i + 1).padStart(6, '0')} ${PAD}`,
);

/** The built CLI run inside the mount namespace of process `pid` (nsenter), to its end. */
function cliIn(
  pid: number,
  args: string[],
): { result: Promise<CliResult>; sawHalf: Promise<void> } {
  const proc = spawn('nsenter', ['-t', String(pid), '-m', process.execPath, CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let half: () => void = () => undefined;
  const sawHalf = new Promise<void>((resolve) => (half = resolve));
  proc.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (stdout.includes(`line 006000 ${PAD}\n`)) half();
  });
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const result = new Promise<CliResult>((resolve, reject) => {
    proc.on('error', reject);
    proc.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { result, sawHalf };
}

const canUnshare =
  process.getuid?.() === 0 && spawnSync('unshare', ['-m', 'true']).status === 0
    ? undefined
    : 'unshare -m needs root';

describeSlurm('output of a Slurm pilot whose sandbox the client cannot see', () => {
  let child: ClientChild | undefined;
  let gate: FlockGate | undefined;
  let root: string | undefined;

  // before tempDirs' (hooks run in the order they were added): the agents are found in the dir
  afterEach(async () => {
    gate?.remove();
    if (child !== undefined && child.proc.exitCode === null) {
      child.proc.kill('SIGKILL');
      await child.exit;
    }
    if (root !== undefined) {
      killAgents(root);
      // a Slurm agent is ended by its job: cancel the job of a run that failed midway
      for (const d of readdirSync(root)) {
        if (!existsSync(path.join(root, d, 'journal.jsonl'))) continue;
        const { jobId } = agentTrace(path.join(root, d), 'pilot.0000');
        // (a job that ended already is no error here)
        if (jobId !== undefined) {
          await slurmCommand(slurmEnv()!, 'scancel', [jobId]).catch(() => undefined);
        }
      }
    }
    [child, gate, root] = [undefined, undefined, undefined];
  });
  const temp = tempDirs('pf-hidden-');

  (canUnshare === undefined ? it : it.skip)(
    'tmgr.tail -f, pilotfish tail -f and logs read it through the agent, every line once, in order',
    async () => {
      root = temp.make();
      gate = await closedGate(path.join(root, 'gate'));
      const env = { ...process.env, ...slurmEnv() };
      child = clientChild(CHILD, [root, path.join(root, 'gate')], env, [
        'unshare',
        '-m',
        '--propagation',
        'private',
      ]);
      const ready = (await child.next('the follower at line 6000', 170_000)) as {
        dir: string;
        session: string;
        sandbox: string;
        hidden: boolean;
        long: string;
        files: string;
      };
      // the client sees an empty directory; this process (like the agent) sees the real one
      expect(ready.hidden).toBe(true);
      expect(readdirSync(ready.sandbox)).toContain('output');
      const pid = child.proc.pid!;
      const follow = cliIn(pid, ['tail', ready.session, ready.long, '-f', '--dir', root]);
      await withTimeout(follow.sawHalf, 60_000, 'pilotfish tail -f at line 6000');
      await gate.open();
      const followed = (await child.next('the follower to end', 60_000)) as Record<string, unknown>;
      expect(followed).toEqual({
        followed: LINES,
        inOrder: true,
        state: 'DONE',
        lastStdout: expected.at(-1),
      });
      const tail = await withTimeout(follow.result, 60_000, 'pilotfish tail -f to end');
      expect([tail.code, tail.stderr]).toEqual([0, '']);
      expect(tail.stdout).toBe(expected.join('\n') + '\n');
      // the stream rotated while it was followed (seen here, where the sandbox is visible)
      const parts = readdirSync(path.join(ready.sandbox, 'output')).filter((n) =>
        n.endsWith('.pfout'),
      );
      expect(parts.length).toBeGreaterThanOrEqual(3);
      // logs of finished tasks, 'stream' and 'files', through the live session
      const logs = await cliIn(pid, ['logs', ready.session, ready.long, '--dir', root]).result;
      expect([logs.code, logs.stderr]).toEqual([0, '']);
      expect(logs.stdout).toBe(expected.join('\n') + '\n');
      const filesLog = await cliIn(pid, ['logs', ready.session, ready.files, '--dir', root]).result;
      expect(filesLog).toEqual({ code: 0, stdout: 'one\ntwo\nthree\n', stderr: '' });
      child.proc.kill('SIGTERM');
      expect(await child.next('the session to close', 60_000)).toEqual({ closed: true });
      expect(await child.exit).toBe(0);
    },
    300_000,
  );
});
