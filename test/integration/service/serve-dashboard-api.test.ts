import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { compileSchema } from '../../../src/lib/runtime-ajv';
import { runCli } from '../../support/cli';
import { api, readEvents, type LiveService, serveInTempDir, stopServe } from '../../support/serve';

// What the dashboard asks of `pilotfish serve`, over real HTTP: pages of tasks by place among
// the matches (with how many match and where the event stream stands), the filters by name
// prefix and reason, who a token is, how busy each pilot is and why tasks failed, the page's
// own files under their policy, and the session's timeline.

const SCHEMA = 'https://pilotfish.dev/schemas/service-reply.schema.json#/definitions/';
const checker = (name: string) => {
  const v = compileSchema({ $ref: `${SCHEMA}${name}` });
  return (x: unknown): void => {
    if (!v(x)) throw new Error(`not a ${name}: ${JSON.stringify(v.errors)}`);
  };
};
const isTaskPage = checker('TaskPage');
const isTaskDetail = checker('TaskDetail');
const isWhoami = checker('Whoami');

describe('pilotfish serve: what the dashboard asks', () => {
  let dir: string;
  let s: LiveService;
  let readToken: string;
  const N = 250;

  beforeAll(async () => {
    ({ dir, s } = await serveInTempDir('pf-serve-dash-'));
    const t = await runCli(['serve', '--dir', dir, 'token', 'add', '--scope', 'read']);
    readToken = t.stdout.trim();
    const bad = [1, 2, 3].map((i) => ({
      uid: `bad-${i}`,
      name: `bad-${i}`,
      executable: '/bin/sh',
      arguments: ['-c', `exit ${i}`],
    }));
    const missing = { uid: 'missing', executable: '/nonexistent/program' };
    expect((await api(s, 'POST', '/v1/tasks', { tasks: [...bad, missing] })).status).toBe(201);
    const w = await api(s, 'POST', '/v1/tasks/wait', {
      uids: ['bad-1', 'bad-2', 'bad-3', 'missing'],
      timeoutS: 30,
    });
    expect(w.body.pending).toEqual([]);
    const gate = { uid: 'gate', executable: '/bin/sleep', arguments: ['600'], coresPerRank: 1 };
    expect((await api(s, 'POST', '/v1/tasks', { tasks: [gate] })).status).toBe(201);
    await readEvents(s, {
      until: (evs) => evs.some((e) => e.data.uid === 'gate' && e.data.state === 'AGENT_EXECUTING'),
      timeoutMs: 30_000,
    });
    const waiting = Array.from({ length: N }, (_, i) => ({
      uid: `w-${i}`,
      name: `wait-${i}`,
      executable: '/bin/true',
      after: ['gate'],
    }));
    expect((await api(s, 'POST', '/v1/tasks', { tasks: waiting })).status).toBe(201);
  }, 90_000);
  afterAll(() => stopServe(s, dir), 60_000);

  it('pages by place among the matches, with the total and the latest event id', async () => {
    const r = await api(s, 'GET', '/v1/tasks?namePrefix=wait-&offset=100&limit=50');
    expect(r.status).toBe(200);
    isTaskPage(r.body);
    expect(r.body.total).toBe(N);
    expect(r.body.offset).toBe(100);
    expect((r.body.tasks as { uid: string }[]).map((t) => t.uid)).toEqual(
      Array.from({ length: 50 }, (_, i) => `w-${100 + i}`),
    );
    expect(r.body.next).toBeUndefined();
    // past the end: no tasks, the same total
    const past = await api(s, 'GET', '/v1/tasks?namePrefix=wait-&offset=1000');
    expect(past.body).toMatchObject({ tasks: [], total: N, offset: 1000 });
    // what happens after `events` is what the stream sends from it
    const events = r.body.events as number;
    expect(events).toBeGreaterThan(0);
    expect((await api(s, 'POST', '/v1/tasks/w-7/cancel')).status).toBe(200);
    const after = await readEvents(s, {
      lastEventId: events,
      until: (evs) => evs.some((e) => e.data.uid === 'w-7' && e.data.state === 'CANCELED'),
      timeoutMs: 20_000,
    });
    expect(after[0]!.id).toBe(events + 1);
    // a page by `after` has no total (it is not counted)
    const byCursor = await api(s, 'GET', '/v1/tasks?limit=2');
    isTaskPage(byCursor.body);
    expect(byCursor.body.total).toBeUndefined();
  });

  it('refuses offset and after together, naming offset', async () => {
    const r = await api(s, 'GET', '/v1/tasks?offset=0&after=3');
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({
      code: 'E_VALIDATION',
      issues: [{ path: '/offset', in: 'querystring' }],
    });
    const bad = await api(s, 'GET', '/v1/tasks?offset=-1');
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('offset');
  });

  it('filters by reason code and by the start of the name', async () => {
    const exit = await api(s, 'GET', '/v1/tasks?reason=E_EXIT_CODE&offset=0');
    expect((exit.body.tasks as { uid: string }[]).map((t) => t.uid)).toEqual([
      'bad-1',
      'bad-2',
      'bad-3',
    ]);
    const notFound = await api(s, 'GET', '/v1/tasks?reason=E_EXEC_NOT_FOUND');
    expect((notFound.body.tasks as { uid: string }[]).map((t) => t.uid)).toEqual(['missing']);
    const both = await api(s, 'GET', '/v1/tasks?reason=E_EXIT_CODE,E_EXEC_NOT_FOUND&offset=0');
    expect(both.body.total).toBe(4);
    // a task without a name is found by its uid
    const byUid = await api(s, 'GET', '/v1/tasks?namePrefix=miss&offset=0');
    expect(byUid.body.total).toBe(1);
    const lower = await api(s, 'GET', '/v1/tasks?reason=e_exit');
    expect(lower.status).toBe(400);
  });

  it('says who a token is and what it may do', async () => {
    const admin = await api(s, 'GET', '/v1/whoami');
    isWhoami(admin.body);
    expect(admin.body).toMatchObject({ session: s.session, may: { submit: true, admin: true } });
    const look = await api({ url: s.url, token: readToken }, 'GET', '/v1/whoami');
    isWhoami(look.body);
    expect(look.body).toMatchObject({ scopes: ['read'], may: { submit: false, admin: false } });
    expect((await api({ url: s.url }, 'GET', '/v1/whoami')).status).toBe(401);
  });

  it("says each pilot's cores in use and the failures by reason", async () => {
    const st = await api(s, 'GET', '/v1/status?pending=0&running=0');
    const [pilot] = st.body.pilots as { busyCores: number; busyGpus: number; cores: number }[];
    expect(pilot!.busyCores).toBe(1); // the gate
    expect(pilot!.busyGpus).toBe(0);
    expect(st.body.failures).toEqual({ E_EXIT_CODE: 3, E_EXEC_NOT_FOUND: 1 });
    const one = await api(s, 'GET', '/v1/tasks/w-3');
    isTaskDetail(one.body);
    expect(one.body.explanation).toMatchObject({ waiting: { kind: 'dependencies' } });
  });

  it("gives a failed task's page the time of every state, those its store got late too", async () => {
    // the agent's hand-back reaches the store on its own path, maybe after the final state
    await readEvents(s, {
      until: (evs) =>
        evs.some((e) => e.data.uid === 'bad-1' && e.data.state === 'TMGR_STAGING_OUTPUT_PENDING'),
      timeoutMs: 20_000,
    });
    const r = await api(s, 'GET', '/v1/tasks/bad-1');
    isTaskDetail(r.body);
    const history = r.body.history as { state: string; ts?: number; inferred: boolean }[];
    expect(history.map((h) => h.state).slice(-1)).toEqual(['FAILED']);
    expect(history.filter((h) => h.ts === undefined)).toEqual([]);
    expect(history.every((h) => !h.inferred)).toBe(true);
  });

  it('serves the page and its files under a policy, open, and nothing else from there', async () => {
    const root = await fetch(`${s.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/dashboard/');
    const page = await fetch(`${s.url}/dashboard/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await page.text();
    expect(html).toContain('<script src="app.js"></script>');
    const js = await fetch(`${s.url}/dashboard/app.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await js.text()).length).toBeGreaterThan(1000);
    for (const p of ['/dashboard/nothing.js', '/dashboard/..%2Fserve.json', '/dashboard/.hidden']) {
      const r = await fetch(`${s.url}${p}`);
      expect([404, 401]).toContain(r.status);
      expect(await r.text()).not.toContain('"session"');
    }
  });

  it("serves the session's timeline, whose one script its policy allows by hash", async () => {
    expect((await api({ url: s.url }, 'GET', '/v1/timeline')).status).toBe(401);
    const r = await fetch(`${s.url}/v1/timeline`, {
      headers: { authorization: `Bearer ${readToken}` },
    });
    expect(r.status).toBe(200);
    const html = await r.text();
    expect(html).toContain('pilotfish timeline');
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!;
    const hash = createHash('sha256').update(script).digest('base64');
    const csp = r.headers.get('content-security-policy')!;
    expect(csp).toContain(`script-src 'sha256-${hash}'`);
    expect(csp).toContain("default-src 'none'");
    // the dashboard's own policy allows the same script, for the frame it shows it in
    const page = await fetch(`${s.url}/dashboard/`);
    expect(page.headers.get('content-security-policy')).toContain(`'sha256-${hash}'`);
  });
});
