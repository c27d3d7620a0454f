import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../../support/cli';
import { api, startServe, stopServe, type LiveService } from '../../support/serve';

// The model router inside `pilotfish serve --router FILE`: the same address and tokens as the
// jobs API (completions need `submit`, the lists `read`), the replicas stopped with the service.

const SERVER = path.resolve(__dirname, '../../support/model-server.js');

describe('pilotfish serve --router', () => {
  let dir: string;
  let s: LiveService | undefined;
  let readToken: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-serve-router-'));
    const config = {
      models: [
        {
          name: 'a',
          service: {
            executable: process.execPath,
            arguments: [SERVER, '--name', 'a'],
            service: { port: 'auto', ready: { http: '/health' } },
          },
        },
      ],
    };
    fs.writeFileSync(path.join(dir, 'router.json'), JSON.stringify(config));
    s = await startServe(path.join(dir, 'svc'), ['--router', path.join(dir, 'router.json')]);
    const added = await runCli(['serve', '--dir', path.join(dir, 'svc'), 'token', 'add']);
    readToken = added.stdout.trim();
  }, 60_000);
  afterAll(() => stopServe(s, dir), 60_000);

  it('routes an OpenAI request to a replica it starts, on its own address and tokens', async () => {
    const chat = (token: string): Promise<Response> =>
      fetch(`${s!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'a', messages: [{ role: 'user', content: 'hi' }] }),
      });
    expect((await chat(readToken)).status).toBe(403);
    const res = await chat(s!.token);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { model: string; pid: number };
    expect(body.model).toBe('a');
    const list = await api({ url: s!.url, token: readToken }, 'GET', '/v1/models');
    expect(list).toMatchObject({
      status: 200,
      body: { object: 'list', data: [{ id: 'a', replicas: [{ state: 'ready' }] }] },
    });
    const metrics = await fetch(`${s!.url}/metrics`, {
      headers: { authorization: `Bearer ${readToken}` },
    });
    const text = await metrics.text();
    expect(text).toContain('pilotfish_router_replicas{model="a",state="ready"} 1');
    expect(text).toContain('pilotfish_router_replica_load_seconds_count{model="a"} 1');
    expect(text).toContain('pilotfish_router_queued{model="a"} 0');
    // the replica is a task of the service's session, as any other
    const uid = (list.body.data as { replicas: { id: string }[] }[])[0]!.replicas[0]!.id;
    // and the router stands in the service's status, for the API and `status --server`
    const status = await api({ url: s!.url, token: readToken }, 'GET', '/v1/status');
    expect(status.body).toMatchObject({
      routers: [
        {
          models: [
            {
              name: 'a',
              loads: 1,
              served: 1,
              replicas: [{ id: uid, state: 'ready', inFlight: 0 }],
            },
          ],
        },
      ],
    });
    const tokenFile = path.join(dir, 'read.token');
    fs.writeFileSync(tokenFile, readToken, { mode: 0o600 });
    const shown = await runCli(['status', '--server', s!.url, '--token-file', tokenFile]);
    expect(shown.stdout).toMatch(
      new RegExp(
        `router: 1 models\\n {2}a: 1 replicas, 0 queued, 0 in flight; 1 loads .*\\n {4}${uid.replace(/\./g, '\\.')} ready on pilot\\.0000`,
      ),
    );
    expect((await api(s!, 'GET', `/v1/tasks/${uid}`)).body).toMatchObject({
      uid,
      state: 'AGENT_EXECUTING',
    });
    // stopped with the service: its process is gone once serve has exited
    s!.cli.proc.kill('SIGTERM');
    expect((await s!.cli.result).code).toBe(0);
    s = undefined;
    expect(() => process.kill(body.pid, 0)).toThrow();
  }, 120_000);

  it('refuses a router config that breaks its schema, naming the path', async () => {
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(
      bad,
      JSON.stringify({ models: [{ name: 'x', service: { executable: '/bin/true' } }] }),
    );
    const r = await runCli([
      'serve',
      '--dir',
      path.join(dir, 'svc2'),
      '--port',
      '0',
      '--router',
      bad,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('/models/0/service/service/port is required');
  }, 60_000);
});
