import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { clientChild, killAgents, type ClientChild } from '../../../support/client-child';
import { closedGate } from '../../../support/flock-gate';

const CLIENT = path.join(__dirname, '../../../support/cancel-resume-client.js');

describe('a cancel sent just before the client is killed with SIGKILL', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'pf-resume-cancel-'));
  afterAll(() => {
    killAgents(root);
    rmSync(root, { recursive: true, force: true });
  });

  it('is applied by the resumed client: the running task and the one waiting at the client end CANCELED, the other DONE', async () => {
    const gate = path.join(root, 'gate');
    const closed = await closedGate(gate);
    const children: ClientChild[] = [];
    try {
      const one = clientChild(CLIENT, ['first', root, gate], process.env);
      children.push(one);
      const { session } = (await one.next('running task')) as { session: string };
      expect(await one.exit).toBe(null); // killed itself in the cancel's turn
      const two = clientChild(CLIENT, ['resume', root, session], process.env);
      children.push(two);
      // were the cancel forgotten, 'a' would wait on the gate and 'b' run after it
      const resumed = (await two.next('resumed states', 30_000)) as {
        states: Record<string, string>;
      };
      expect(resumed.states).toEqual({ a: 'CANCELED', b: 'CANCELED', c: 'DONE' });
      expect(await two.exit).toBe(0);
    } finally {
      for (const c of children) c.proc.kill('SIGKILL'); // a run that failed midway
      closed.remove();
    }
  }, 60_000);
});
