import { existsSync, readFileSync, watch } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { withTimeout } from '../../../src/lib/deferred';
import { fixtures } from '../../support/session-fixture';
import { waitForExit } from '../../support/processes';

/** The pid a file holds, once its writer has written the whole line. */
function pidIn(dir: string, file: string): Promise<number> {
  const read = (): number | undefined => {
    const p = `${dir}/${file}`;
    const text = existsSync(p) ? readFileSync(p, 'utf8') : '';
    return /\n$/.test(text) ? Number(text.trim()) : undefined;
  };
  return withTimeout(
    new Promise((resolve) => {
      const watcher = watch(dir, () => {
        const pid = read();
        if (pid !== undefined) {
          watcher.close();
          resolve(pid);
        }
      });
      const pid = read();
      if (pid !== undefined) {
        watcher.close();
        resolve(pid);
      }
    }),
    10_000,
    `${file} in ${dir}`,
  );
}

describe('an agent that stops answering (SIGSTOP)', () => {
  const fixture = fixtures();

  it('ends its pilot FAILED with the silence, and its tasks with the pilot; nothing stays', async () => {
    const fx = await fixture.open({ cores: 1, agent: { clientTimeoutS: 3 } });
    const [t] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'echo $$ > pid; exec sleep 60'] },
    ]);
    await fx.tmgr.waitTasks({ uids: [t!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 10_000 });
    const taskPid = await pidIn(t!.sandbox!, 'pid');
    const journal = readFileSync(`${fx.session.dir}/journal.jsonl`, 'utf8').split('\n');
    const agentPid = journal
      .filter((l) => l.includes('"t":"agent"') && l.includes('"pid"'))
      .map((l) => (JSON.parse(l) as { pid: number }).pid)[0]!;
    process.kill(agentPid, 'SIGSTOP');
    try {
      await fx.pmgr.waitPilots({ timeoutMs: 15_000 });
      expect([fx.pilot.state, fx.pilot.reason?.code]).toEqual(['FAILED', 'E_AGENT_SILENT']);
      await fx.tmgr.waitTasks({ timeoutMs: 15_000 });
      expect([t!.state, t!.reason?.code]).toEqual(['FAILED', 'E_PILOT_ENDED']);
      await waitForExit(agentPid, 10_000); // killed while stopped
      await waitForExit(taskPid, 10_000); // and what it ran went with it
    } finally {
      try {
        process.kill(agentPid, 'SIGKILL');
        process.kill(taskPid, 'SIGKILL');
      } catch {
        // gone, as it should be
      }
    }
  }, 40_000);
});
