import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { tcpParts } from '../../../../src/client/resume/relocation';
import { clientChild, killAgents, type ClientChild } from '../../../support/client-child';
import { dirEntries } from '../../../support/dir-entries';
import { closedGate } from '../../../support/flock-gate';

const CLIENT = path.join(__dirname, '../../../support/resume-client.js');

/** Every address the journal of the session in `dir` says its agents connect to. */
function journaledAddresses(dir: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync(path.join(dir, 'journal.jsonl'), 'utf8').split('\n')) {
    if (line === '') continue;
    const e = JSON.parse(line) as {
      t: string;
      addresses?: { controlDown: string };
      pilots?: { link: { ports: Record<string, string> } }[];
    };
    if (e.t === 'session') out.push(e.addresses!.controlDown);
    if (e.t === 'pilots') for (const p of e.pilots!) out.push(...Object.values(p.link.ports));
  }
  return out;
}

/** Listens on each address (another process of the machine holding the client's old ports). */
async function holdPorts(addresses: string[]): Promise<net.Server[]> {
  const servers: net.Server[] = [];
  for (const a of addresses) {
    const { host, port } = tcpParts(a)!;
    const server = net.createServer((c) => c.destroy());
    servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, exclusive: true }, () => resolve());
    });
  }
  return servers;
}

describe('a client of an embedded session killed with SIGKILL, whose ports another process then holds', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'pf-resume-ports-'));
  afterAll(() => {
    killAgents(root);
    rmSync(root, { recursive: true, force: true });
  });

  it('is resumed at new ports that its agents read from the session directory: every task ends DONE', async () => {
    const n = 40;
    const [gate, marks, log1, log2] = ['gate', 'marks', 'first.log', 'second.log'].map((f) =>
      path.join(root, f),
    );
    mkdirSync(marks!);
    const closed = await closedGate(gate!);
    const children: ClientChild[] = [];
    let servers: net.Server[] = [];
    try {
      const one = clientChild(
        CLIENT,
        ['first', root, log1!, gate!, marks!, String(n), 'local'],
        process.env,
      );
      children.push(one);
      const { session } = (await one.next('session id')) as { session: string };
      const quiet = (await one.next('first client quiet')) as { atAgent: number };
      one.proc.kill('SIGKILL');
      await one.exit;
      // what any local user could do: listen on the ports /proc/net/tcp shows freed
      servers = await holdPorts(journaledAddresses(path.join(root, session)));
      await closed.open();
      await dirEntries(marks!, quiet.atAgent, 60_000);
      const two = clientChild(CLIENT, ['resume', root, log2!, session], process.env);
      children.push(two);
      expect(await two.next('resumed client summary', 90_000)).toEqual({ states: { DONE: n } });
      expect(await two.exit).toBe(0);
      const moved: unknown = JSON.parse(
        readFileSync(path.join(root, session, 'addresses.json'), 'utf8'),
      );
      expect(moved).toMatchObject({ epoch: 1, pilots: [{ uid: 'pilot.0000' }] });
    } finally {
      for (const c of children) c.proc.kill('SIGKILL');
      for (const s of servers) s.close();
      closed.remove();
    }
  }, 120_000);
});
