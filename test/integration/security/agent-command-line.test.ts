import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { agentTrace } from '../../support/client-child';
import { fixtures } from '../../support/session-fixture';

describe("an agent's command line", () => {
  const fixture = fixtures();

  it('names no session: `ps` shows every local user the command lines, and the bootstrap file (0600) holds the rest', async () => {
    const fx = await fixture.open({ cores: 1 });
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    await fx.tmgr.waitTasks({ uids: [t!.uid], timeoutMs: 30_000 });
    const { pid } = agentTrace(fx.session.dir, fx.pilot.uid);
    const args = readFileSync(`/proc/${pid!}/cmdline`, 'utf8').split('\0');
    expect(args).toContain('agent.json');
    expect(args.join(' ')).not.toContain(fx.session.uid);
  });
});
