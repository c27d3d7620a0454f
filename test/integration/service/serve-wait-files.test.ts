import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { api, type LiveService, serveInTempDir, stopServe } from '../../support/serve';

// `pilotfish serve`: the long poll for tasks' ends (POST /v1/tasks/wait), files put into the
// service's files directory (PUT/HEAD /v1/files/...) and a call's result file, over real HTTP.

describe('pilotfish serve: wait, files, result files', () => {
  let dir: string;
  let s: LiveService;

  beforeAll(async () => ({ dir, s } = await serveInTempDir('pf-serve-wait-')), 60_000);
  afterAll(() => stopServe(s, dir), 60_000);

  const put = (p: string, body: Buffer | string, type = 'application/octet-stream') =>
    fetch(`${s.url}/v1/files/${p}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${s.token}`, 'content-type': type },
      body,
    });

  it('answers a wait once all the tasks are final, with their results', async () => {
    const sub = await api(s, 'POST', '/v1/tasks', {
      tasks: [
        { uid: 'w-1', executable: '/bin/true' },
        { uid: 'w-2', executable: '/bin/sh', arguments: ['-c', 'exit 2'] },
      ],
    });
    expect(sub.status).toBe(201);
    const r = await api(s, 'POST', '/v1/tasks/wait', { uids: ['w-1', 'w-2'], timeoutS: 30 });
    expect(r.status).toBe(200);
    expect(r.body.pending).toEqual([]);
    const states = (r.body.tasks as { uid: string; state: string }[]).map((t) => [t.uid, t.state]);
    expect(states.sort()).toEqual([
      ['w-1', 'DONE'],
      ['w-2', 'FAILED'],
    ]);
  }, 60_000);

  it('answers with what is pending when its time is up, and at the first end with any', async () => {
    await api(s, 'POST', '/v1/tasks', {
      tasks: [
        { uid: 'slow', executable: '/bin/sleep', arguments: ['30'] },
        { uid: 'quick', executable: '/bin/true' },
      ],
    });
    const t0 = Date.now();
    const timedOut = await api(s, 'POST', '/v1/tasks/wait', { uids: ['slow'], timeoutS: 0.3 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(timedOut.body).toEqual({ tasks: [], pending: ['slow'] });
    const any = await api(s, 'POST', '/v1/tasks/wait', {
      uids: ['slow', 'quick'],
      any: true,
      timeoutS: 30,
    });
    expect((any.body.tasks as { uid: string }[]).map((t) => t.uid)).toEqual(['quick']);
    expect(any.body.pending).toEqual(['slow']);
    await api(s, 'POST', '/v1/tasks/slow/cancel');
    const canceled = await api(s, 'POST', '/v1/tasks/wait', { uids: ['slow'], timeoutS: 30 });
    expect((canceled.body.tasks as { state: string }[])[0]!.state).toBe('CANCELED');
  }, 60_000);

  it('refuses a wait for tasks it does not have, or a bad body, naming the path', async () => {
    const unknown = await api(s, 'POST', '/v1/tasks/wait', { uids: ['w-1', 'nope'] });
    expect(unknown.status).toBe(404);
    expect((unknown.body.error as { issues: { path: string }[] }).issues[0]!.path).toBe('/uids/1');
    const bad = await api(s, 'POST', '/v1/tasks/wait', { uids: [], timeoutS: 99 });
    expect(bad.status).toBe(400);
    const paths = (bad.body.error as { issues: { path: string }[] }).issues.map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['/uids', '/timeoutS']));
  });

  it('puts a file whole into the files directory, where a task stages it from', async () => {
    const bytes = Buffer.alloc(3 * 1024 * 1024, 7);
    const res = await put('in/data.bin', bytes);
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ path: 'in/data.bin', bytes: bytes.length });
    const file = path.join(dir, 'files', 'in', 'data.bin');
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.join(dir, 'files', 'in'))).toEqual(['data.bin']); // no part left
    const head = await fetch(`${s.url}/v1/files/in/data.bin`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${s.token}` },
    });
    expect([head.status, head.headers.get('content-length')]).toEqual([200, String(bytes.length)]);
    const none = await fetch(`${s.url}/v1/files/in/other`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${s.token}` },
    });
    expect(none.status).toBe(404);
    await api(s, 'POST', '/v1/tasks', {
      tasks: [
        {
          uid: 'reads-it',
          executable: '/bin/sh',
          arguments: ['-c', 'test "$(wc -c < data.bin)" -eq 3145728'],
          inputStaging: [{ source: 'client://in/data.bin', target: 'task://' }],
        },
      ],
    });
    const r = await api(s, 'POST', '/v1/tasks/wait', { uids: ['reads-it'], timeoutS: 30 });
    expect((r.body.tasks as { state: string }[])[0]!.state).toBe('DONE');
  }, 60_000);

  it('refuses a path out of the files directory, through a link, or a body of another type', async () => {
    const token = fs.readFileSync(path.join(dir, 'admin.token'), 'utf8');
    // refused by the path's pattern (400), or normalized by the client out of the route (404)
    for (const bad of ['..%2Fadmin.token', 'a/../../admin.token', '.hidden', 'a//b']) {
      expect([400, 404]).toContain((await put(bad, 'x')).status);
    }
    expect(fs.readFileSync(path.join(dir, 'admin.token'), 'utf8')).toBe(token);
    expect(fs.readdirSync(path.join(dir, 'files')).sort()).toEqual(['in']);
    fs.symlinkSync('/tmp', path.join(dir, 'files', 'out'));
    const probe = `pf-wait-files-${process.pid}`;
    const through = await put(`out/${probe}`, 'x');
    expect(through.status).toBe(409);
    expect(fs.existsSync(path.join('/tmp', probe))).toBe(false);
    expect((await put('j.json', '{}', 'application/json')).status).toBe(415);
    expect((await put('t.txt', 'x', 'text/plain')).status).toBe(415);
  });

  it('has no result file for a task that left none, nor one that is not done', async () => {
    const none = await fetch(`${s.url}/v1/tasks/w-1/result/file`, {
      headers: { authorization: `Bearer ${s.token}` },
    });
    expect(none.status).toBe(404);
    const failed = await api(s, 'GET', '/v1/tasks/w-2/result/file');
    expect([failed.status, (failed.body.error as { code: string }).code]).toEqual([
      409,
      'E_NOT_DONE',
    ]);
  });
});
