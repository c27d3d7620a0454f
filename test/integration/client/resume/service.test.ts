import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { clientChild } from '../../../support/client-child';

const CLIENT = path.join(__dirname, '../../../support/service-resume-client.js');

describe('a client killed with SIGKILL while its service serves', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'pf-resume-svc-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('is resumed by a client that finds the endpoint in the store and gives it to a new dependent', async () => {
    const server = path.join(root, 'server.js');
    writeFileSync(
      server,
      `require('node:http').createServer((q, r) => r.end('pid ' + process.pid))
         .listen(Number(process.env.PF_PORT));`,
    );
    const one = clientChild(CLIENT, ['first', root, server], process.env);
    const { session } = (await one.next('session id')) as { session: string };
    const { endpoint } = (await one.next('endpoint')) as { endpoint: string };
    one.proc.kill('SIGKILL');
    expect(await one.exit).toBe(null);

    const two = clientChild(CLIENT, ['resume', root, session], process.env);
    const summary = (await two.next('resumed client summary')) as {
      endpoint: string;
      client: [string, string];
      web: [string, string | null];
    };
    expect(await two.exit).toBe(0);
    expect(summary.endpoint).toBe(endpoint);
    expect(summary.client[0]).toBe('DONE');
    expect(summary.client[1]).toMatch(/^pid \d+/);
    expect(summary.web).toEqual(['DONE', null]);
  }, 180_000);
});
