import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { renderScript } from '../../../../src/components/pilot-launcher/batch/slurm';
import { withTimeout } from '../../../../src/lib/deferred';
import { fileContains } from '../../../support/file-lines';

/**
 * The Slurm job script's restart loop (agent.restarts), run by bash as sbatch would run it,
 * with a stand-in for the agent that does what its test says on each start and writes which
 * start it is (PILOTFISH_AGENT_RESTART) to `starts`.
 */
describe('the job script starts a dead agent again', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'pf-restarts-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs the job script; the stand-in agent runs `body` (sh) after noting its start. */
  function job(restarts: number, body: string) {
    const agent = path.join(dir, 'agent.sh');
    writeFileSync(agent, `echo "$PILOTFISH_AGENT_RESTART" >> starts\n${body}\n`);
    chmodSync(agent, 0o700);
    const script = renderScript({
      pilot: { uid: 'pilot.0000', sandbox: dir, description: { resource: 'slurm', nodes: 1 } },
      agentCommand: ['/bin/sh', agent],
      restarts,
    });
    const child = spawn('/bin/bash', ['-c', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = withTimeout(
      new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code))),
      20_000,
      'the job script to end',
    );
    const starts = (): string[] =>
      readFileSync(path.join(dir, 'starts'), 'utf8').trim().split('\n');
    return { child, exited, starts, stderr: () => stderr };
  }

  it('after a SIGKILL or a crash, until it ends cleanly', async () => {
    const j = job(
      3,
      'case "$PILOTFISH_AGENT_RESTART" in 0) kill -KILL $$ ;; 1) exit 1 ;; esac; exit 0',
    );
    expect(await j.exited).toBe(0);
    expect(j.starts()).toEqual(['0', '1', '2']);
    expect(j.stderr()).toContain('the agent died (exit 137): starting it again (1 of 3)');
    expect(j.stderr()).toContain('the agent died (exit 1): starting it again (2 of 3)');
  });

  it('not after a bad config (2) or a failed start (3)', async () => {
    for (const rc of [2, 3]) {
      rmSync(path.join(dir, 'starts'), { force: true });
      const j = job(3, `exit ${rc}`);
      expect(await j.exited).toBe(rc);
      expect(j.starts()).toEqual(['0']);
    }
  });

  it('gives up after agent.restarts starts again, with the last exit', async () => {
    const j = job(2, 'kill -KILL $$');
    expect(await j.exited).toBe(137);
    expect(j.starts()).toEqual(['0', '1', '2']);
    expect(j.stderr()).toContain('started again 2 times: giving up');
  });

  it('passes a cancel (SIGTERM) on to the agent, which ends as it would, and is not started again', async () => {
    const j = job(
      3,
      "trap 'echo term >> got; exit 0' TERM; echo up >> got; while :; do sleep 1; done",
    );
    await fileContains(path.join(dir, 'got'), 'up');
    j.child.kill('SIGTERM');
    expect(await j.exited).toBe(0);
    expect(readFileSync(path.join(dir, 'got'), 'utf8')).toBe('up\nterm\n');
    expect(j.starts()).toEqual(['0']);
  });
});
