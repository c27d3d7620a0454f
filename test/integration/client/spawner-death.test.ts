import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { waitForExit } from '../../support/processes';
import { pidWritten } from '../../support/pid-file';
import { fixtures } from '../../support/session-fixture';

const parentOf = (pid: number): number =>
  Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);

describe('spawner helpers killed under a running pilot', () => {
  const fixture = fixtures();

  it('fail the tasks they ran, with the reason, kill them, and are replaced for the next', async () => {
    const fx = await fixture.open({ cores: 2, agent: { spawners: 2 } });
    const running = await fx.tmgr.submitTasks(
      [0, 1].map(() => ({
        executable: '/bin/sh',
        arguments: ['-c', 'echo $$ > pid; exec sleep 60'],
      })),
    );
    await fx.tmgr.waitTasks({ states: ['AGENT_EXECUTING'], timeoutMs: 10_000 });
    const pids = await Promise.all(running.map((t) => pidWritten(t.sandbox!)));
    const helpers = [...new Set(pids.map(parentOf))];
    for (const h of helpers) process.kill(h, 'SIGKILL');
    await fx.tmgr.waitTasks({ timeoutMs: 15_000 });
    for (const t of running) {
      expect([t.state, t.reason?.code]).toEqual(['FAILED', 'E_EXEC_FAILED']);
      expect(t.reason?.message).toMatch(
        /the spawner helper \(pid \d+\) died \(killed by SIGKILL\)/,
      );
    }
    for (const pid of pids) await waitForExit(pid, 10_000);
    const after = await fx.tmgr.submitTasks([0, 1, 2].map(() => ({ executable: '/bin/true' })));
    await fx.tmgr.waitTasks({ uids: after.map((t) => t.uid), timeoutMs: 15_000 });
    expect(after.map((t) => t.state)).toEqual(['DONE', 'DONE', 'DONE']);
    expect(fx.pilot.state).toBe('PMGR_ACTIVE');
  }, 40_000);
});
