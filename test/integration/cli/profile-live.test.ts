import { afterEach, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { listSessionDirs } from '../../../src/cli/session-dir';
import type { ProfileReport } from '../../../src/profile/intervals';
import { CLI, runCli } from '../../support/cli';
import { cleanupFifos, fifo } from '../../support/fifo';
import { closedGate, type FlockGate } from '../../support/flock-gate';

describe('pilotfish profile and timeline on a live session', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-profile-live-'));
  let gate: FlockGate | undefined;
  afterEach(() => {
    gate?.remove();
    cleanupFifos();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads a running session: its running task and its pilot are open until now', async () => {
    const gateFile = path.join(dir, 'gate');
    const started = fifo(path.join(dir, 'started'));
    gate = await closedGate(gateFile);
    const file = path.join(dir, 'live.json');
    writeFileSync(
      file,
      JSON.stringify({
        pilots: [{ resource: 'local', cores: 2 }],
        tasks: [
          { name: 'quick', executable: '/bin/true' },
          {
            name: 'held',
            executable: '/bin/sh',
            arguments: ['-c', `echo started > ${dir}/started; flock -s ${gateFile} true`],
          },
        ],
      }),
    );
    const run = spawn(process.execPath, [CLI, 'run', file, '--dir', dir], { stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => run.once('exit', resolve));
    await started.data(60_000); // 'held' runs, and waits at the gate
    const session = listSessionDirs(dir)[0]!;

    const r = await runCli(['profile', session, '--json']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const p = JSON.parse(r.stdout) as ProfileReport;
    const held = p.tasks.find((t) => t.name === 'held')!.attempts.at(-1)!;
    expect(held.final).toBeUndefined();
    expect(held.states.map((s) => s.state)).toContain('AGENT_EXECUTING');
    // it holds its core until the read; its launch time reaches the store with its exit (the
    // executor publishes it then), so until then its open phase is launching
    expect(held.intervals.tearingDown).toEqual([p.readAt, p.readAt]);
    const open = held.launched === undefined ? held.intervals.launching : held.intervals.running;
    expect(open![1]).toBe(p.readAt);
    expect(p.pilots[0]!.final).toBeUndefined();
    expect(p.pilots[0]!.intervals.active![1]).toBe(p.readAt);
    const [u] = p.utilization.pilots;
    expect([u!.end, u!.check.ok]).toEqual([p.readAt, true]);

    const out = path.join(dir, 'live.html');
    const t = await runCli(['timeline', session, '-o', out]);
    expect([t.code, t.stderr]).toEqual([0, '']);
    expect(existsSync(out)).toBe(true);

    await gate.open();
    expect(await exited).toBe(0);
  }, 120_000);
});
