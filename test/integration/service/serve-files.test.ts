import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runCli } from '../../support/cli';
import {
  api,
  finalStates,
  readEvents,
  type LiveService,
  type SseEvent,
  serveInTempDir,
  stopServe,
} from '../../support/serve';

// `pilotfish serve`: what a task leaves (artifacts, output ranges), deleting it, service
// endpoints, the session's status and the rate limit per token, over real HTTP.

/** Resolves once every uid has a final state on the event stream; uid -> that state. */
async function ended(s: LiveService, uids: string[]): Promise<Map<string, string>> {
  const done = (evs: SseEvent[]) => uids.every((u) => finalStates(evs).has(u));
  const finals = finalStates(await readEvents(s, { until: done }));
  return new Map(uids.map((u) => [u, finals.get(u)![0]!]));
}

describe('pilotfish serve: files, deletion, services, limits', () => {
  let dir: string;
  let s: LiveService;

  beforeAll(async () => ({ dir, s } = await serveInTempDir('pf-serve-files-')), 60_000);
  afterAll(() => stopServe(s, dir), 60_000);

  it("lists and downloads a task's staged-out artifacts, kept inside the service's directory", async () => {
    const sub = await api(s, 'POST', '/v1/tasks', {
      tasks: [
        {
          uid: 'art',
          executable: '/bin/sh',
          arguments: [
            '-c',
            'mkdir -p r && printf "x=%s\\n" 42 > r/out.txt && ln -s /etc/passwd r/link',
          ],
          outputStaging: [
            { source: 'task://r/out.txt', target: 'results/' },
            { source: 'task://r/link', target: 'client://results/passwd-link', action: 'copy' },
          ],
        },
      ],
    });
    expect(sub.status).toBe(201);
    expect((await ended(s, ['art'])).get('art')).toBe('DONE');
    const task = await api(s, 'GET', '/v1/tasks/art');
    const staged = (task.body.description as { outputStaging: { target: string }[] }).outputStaging;
    expect(staged[0]!.target).toBe(`client://${path.join(dir, 'artifacts', 'art', 'results')}/`);

    const list = await api(s, 'GET', '/v1/tasks/art/artifacts');
    const files = (list.body.artifacts as { path: string; bytes: number }[]).map((a) => a.path);
    expect(files).toContain('results/out.txt');
    const res = await fetch(`${s.url}/v1/tasks/art/artifacts/results/out.txt`, {
      headers: { authorization: `Bearer ${s.token}` },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('x=42\n');
    // a link the task left is not followed, nor is a way out of the task's directory
    fs.symlinkSync('/etc/passwd', path.join(dir, 'artifacts', 'art', 'results', 'evil'));
    for (const bad of ['results/evil', '..%2F..%2Fadmin.token', '%2E%2E/%2E%2E/tokens.json']) {
      const r = await fetch(`${s.url}/v1/tasks/art/artifacts/${bad}`, {
        headers: { authorization: `Bearer ${s.token}` },
      });
      expect(r.status).toBe(404);
    }
  }, 60_000);

  it('refuses staging out of the service directory by the JSON path', async () => {
    const before = (await api(s, 'GET', '/v1/tasks?limit=1000')).body.tasks as unknown[];
    const r = await api(s, 'POST', '/v1/tasks', {
      tasks: [
        { executable: '/bin/true' },
        {
          executable: '/bin/true',
          outputStaging: [{ source: 'task://a', target: 'client:///home/x/.bashrc' }],
          inputStaging: [{ source: '../../admin.token', target: 'task://t' }],
        },
      ],
    });
    expect(r.status).toBe(400);
    const issues = (r.body.error as { issues: { path: string }[] }).issues.map((i) => i.path);
    expect(issues).toEqual(['/tasks/1/inputStaging/0/source', '/tasks/1/outputStaging/0/target']);
    // whole or refused: the good task of the batch was not taken either
    const all = (await api(s, 'GET', '/v1/tasks?limit=1000')).body.tasks as unknown[];
    expect(all.length).toBe(before.length);
  }, 30_000);

  it('stages a file the owner put in the files directory into a task', async () => {
    fs.writeFileSync(path.join(dir, 'files', 'in.txt'), 'given\n');
    await api(s, 'POST', '/v1/tasks', {
      tasks: [
        {
          uid: 'stage-in',
          executable: '/bin/cat',
          arguments: ['in.txt'],
          inputStaging: [{ source: 'in.txt', target: 'task://in.txt' }],
        },
      ],
    });
    expect((await ended(s, ['stage-in'])).get('stage-in')).toBe('DONE');
    const out = await fetch(`${s.url}/v1/tasks/stage-in/output`, {
      headers: { authorization: `Bearer ${s.token}` },
    });
    expect(await out.text()).toBe('given\n');
  }, 60_000);

  it('reads byte ranges of an output', async () => {
    await api(s, 'POST', '/v1/tasks', {
      tasks: [{ uid: 'ranged', executable: '/bin/echo', arguments: ['0123456789'] }],
    });
    await ended(s, ['ranged']);
    const get = (range: string) =>
      fetch(`${s.url}/v1/tasks/ranged/output`, {
        headers: { authorization: `Bearer ${s.token}`, range },
      });
    const mid = await get('bytes=2-5');
    expect(mid.status).toBe(206);
    expect(mid.headers.get('content-range')).toBe('bytes 2-5/11');
    expect(await mid.text()).toBe('2345');
    const tail = await get('bytes=-3');
    expect(await tail.text()).toBe('89\n');
    expect((await get('bytes=20-')).status).toBe(416);
    expect((await get('lines=1-2')).status).toBe(400);
  }, 60_000);

  it('deletes a final task (refuses a live one), purges its files, keeps its uid taken', async () => {
    await api(s, 'POST', '/v1/tasks', {
      tasks: [
        {
          uid: 'gone',
          executable: '/bin/sh',
          arguments: ['-c', 'echo kept > f'],
          sandbox: true,
          outputStaging: [{ source: 'task://f', target: 'f' }],
        },
        { uid: 'waits', executable: '/bin/sleep', arguments: ['600'] },
      ],
    });
    await ended(s, ['gone']);
    const sandbox = (await api(s, 'GET', '/v1/tasks/gone')).body.sandbox as string;
    expect(fs.existsSync(sandbox)).toBe(true);
    expect(fs.existsSync(path.join(dir, 'artifacts', 'gone', 'f'))).toBe(true);

    const live = await api(s, 'DELETE', '/v1/tasks/waits');
    expect(live.status).toBe(409);
    expect((live.body.error as { code: string }).code).toBe('E_NOT_FINAL');

    const del = await api(s, 'DELETE', '/v1/tasks/gone?purge=true');
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ uid: 'gone', deleted: true });
    expect(fs.existsSync(sandbox)).toBe(false);
    expect(fs.existsSync(path.join(dir, 'artifacts', 'gone'))).toBe(false);
    expect((await api(s, 'GET', '/v1/tasks/gone')).status).toBe(404);
    const listed = (await api(s, 'GET', '/v1/tasks?limit=1000')).body.tasks as { uid: string }[];
    expect(listed.map((t) => t.uid)).not.toContain('gone');
    const again = await api(s, 'POST', '/v1/tasks', {
      tasks: [{ uid: 'gone', executable: '/bin/true' }],
    });
    expect(again.status).toBe(409);
    expect(JSON.stringify(again.body)).toContain('deleted task');
    expect(fs.readFileSync(path.join(dir, 'deleted.jsonl'), 'utf8')).toContain('"gone"');
    await api(s, 'POST', '/v1/tasks/waits/cancel');
  }, 60_000);

  it("lists service tasks with the endpoint they are ready at, and the session's status", async () => {
    await api(s, 'POST', '/v1/tasks', {
      tasks: [
        {
          uid: 'svc',
          mode: 'service',
          executable: '/bin/sh',
          arguments: ['-c', 'exec python3 -m http.server --bind 127.0.0.1 "$PF_PORT"'],
          service: { port: 'auto', ready: { http: '/' } },
        },
        // released once the session knows the service is ready (and where)
        { uid: 'svc-user', executable: '/bin/true', after: [{ task: 'svc', on: 'ready' }] },
      ],
    });
    await ended(s, ['svc-user']);
    const { body } = await api(s, 'GET', '/v1/services');
    const svc = (body.services as { uid: string; endpoint?: string }[]).find(
      (x) => x.uid === 'svc',
    );
    expect(svc?.endpoint).toMatch(/^127\.0\.0\.1:\d+$/);
    const status = await api(s, 'GET', '/v1/status?pending=2');
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ state: 'live' });
    expect((await api(s, 'GET', '/v1/status?pending=x')).status).toBe(400);
    await api(s, 'POST', '/v1/tasks/svc/cancel');
  }, 60_000);

  it('serves its OpenAPI 3.1 document to anyone: every route, every $ref resolved within it', async () => {
    const res = await fetch(`${s.url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.openapi).toBe('3.1.0');
    const routes = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`),
    );
    expect(routes).toEqual(
      expect.arrayContaining([
        'POST /v1/tasks',
        'GET /v1/tasks',
        'GET /v1/tasks/{uid}',
        'DELETE /v1/tasks/{uid}',
        'POST /v1/tasks/{uid}/cancel',
        'GET /v1/tasks/{uid}/output',
        'GET /v1/tasks/{uid}/result',
        'GET /v1/tasks/{uid}/artifacts',
        'GET /v1/events',
        'GET /v1/pilots',
        'POST /v1/pilots',
        'GET /v1/services',
        'GET /v1/status',
        'GET /metrics',
        'GET /v1/healthz',
      ]),
    );
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['TaskDescription', 'PilotDescription', 'StagingDirective']),
    );
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]*"/g) ?? [];
    expect(refs.length).toBeGreaterThan(0);
    for (const r of new Set(refs)) {
      const target = r.slice('"$ref":"'.length, -1);
      expect(target).toMatch(/^#\//);
      let at: unknown = doc;
      for (const part of target.slice(2).split('/')) at = (at as Record<string, unknown>)?.[part];
      expect([target, at !== undefined]).toEqual([target, true]);
    }
  }, 30_000);

  it("limits a token's requests a minute: 429 with Retry-After, other tokens go on", async () => {
    const made = await runCli([
      'serve',
      '--dir',
      dir,
      'token',
      'add',
      '--scope',
      'read',
      '--rate',
      '5',
    ]);
    expect(made.code).toBe(0);
    const slow = { url: s.url, token: made.stdout.trim() };
    for (let i = 0; i < 5; i++) expect((await api(slow, 'GET', '/v1/pilots')).status).toBe(200);
    const res = await fetch(`${s.url}/v1/pilots`, {
      headers: { authorization: `Bearer ${slow.token}` },
    });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('E_RATE_LIMITED');
    expect(body.error.message).toMatch(/more than 5 requests in a minute/);
    expect((await api(s, 'GET', '/v1/pilots')).status).toBe(200);
    const list = await runCli(['serve', '--dir', dir, 'token', 'list']);
    expect(list.stdout).toMatch(/5\/min/);
  }, 30_000);
});
