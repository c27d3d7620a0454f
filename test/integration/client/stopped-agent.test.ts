import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { pidWritten } from '../../support/pid-file';
import { fixtures } from '../../support/session-fixture';
import { waitForExit } from '../../support/processes';

describe('an agent that stops answering (SIGSTOP)', () => {
  const fixture = fixtures();

  it('ends its pilot FAILED with the silence, and its tasks with the pilot; nothing stays', async () => {
    const fx = await fixture.open({ cores: 1, agent: { clientTimeoutS: 3 } });
    const [t] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'echo $$ > pid; exec sleep 60'] },
    ]);
    await fx.tmgr.waitTasks({ uids: [t!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 10_000 });
    const taskPid = await pidWritten(t!.sandbox!);
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
