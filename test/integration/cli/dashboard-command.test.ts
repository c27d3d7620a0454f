import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium as playwright, type Browser } from 'playwright-core';
import { chromiumOrWhy } from '../../../bench/chromium';
import { compileSchema } from '../../../src/lib/runtime-ajv';
import { runCli, startCli, type LiveCli } from '../../support/cli';
import { textOf, until } from '../../support/page-wait';

// `pilotfish dashboard SESSION`: the dashboard of a session no `pilotfish serve` holds, read-only
// from its store: one that ended, and one a `pilotfish run` still runs (its changes arrive).

const chromium = chromiumOrWhy();
if ('why' in chromium && process.env.CI !== undefined) {
  throw new Error(`the browser test must run in CI: ${chromium.why}`);
}
const SCHEMA = 'https://pilotfish.dev/schemas/service-reply.schema.json#/definitions/';
const valid = (name: string, x: unknown): boolean => {
  const v = compileSchema({ $ref: `${SCHEMA}${name}` });
  if (!v(x)) throw new Error(`not a ${name}: ${JSON.stringify(v.errors)}`);
  return true;
};

interface Served {
  cli: LiveCli;
  base: string;
  token: string;
  url: string;
}

async function dashboardOf(session: string): Promise<Served> {
  const cli = startCli(['dashboard', session, '--port', '0']);
  const m = await cli.stdoutMatch(/^(http:\/\/127\.0\.0\.1:\d+)\/dashboard\/#token=(\S+)\n/m);
  return { cli, base: m[1]!, token: m[2]!, url: m[0].trim() };
}

type Json = Record<string, unknown>;

async function get(s: Served, route: string): Promise<{ status: number; body: Json }> {
  const r = await fetch(`${s.base}${route}`, { headers: { authorization: `Bearer ${s.token}` } });
  return { status: r.status, body: (await r.json()) as Json };
}

/** Reads GET /v1/events from `from` until `want` matches what came; the text read. */
async function eventsUntil(s: Served, from: number, want: RegExp): Promise<string> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 30_000);
  let text = '';
  try {
    const r = await fetch(`${s.base}/v1/events?from=${from}`, {
      headers: { authorization: `Bearer ${s.token}` },
      signal: abort.signal,
    });
    for await (const chunk of r.body!) {
      text += Buffer.from(chunk as Uint8Array).toString();
      if (want.test(text)) return text;
    }
    throw new Error(`the stream ended before ${want}: ${text}`);
  } catch (e) {
    if (abort.signal.aborted) throw new Error(`no ${want} in 30 s: ${text}`, { cause: e });
    throw e;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

async function stop(s: Served | undefined): Promise<void> {
  s?.cli.proc.kill('SIGTERM');
  const r = await s?.cli.result;
  if (r !== undefined) expect(r.code).toBe(0);
}

describe('pilotfish dashboard SESSION (read-only, from the store)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-dash-cmd-'));
  let ended: string;
  let s: Served | undefined;
  let browser: Browser | undefined;

  beforeAll(async () => {
    const file = path.join(dir, 'w.json');
    writeFileSync(
      file,
      JSON.stringify({
        pilots: [{ resource: 'local', cores: 2 }],
        tasks: [
          { uid: 'hello', name: 'hello', executable: '/bin/sh', arguments: ['-c', 'echo hi'] },
          { uid: 'bad', name: 'bad', executable: '/bin/sh', arguments: ['-c', 'echo no; exit 4'] },
        ],
      }),
    );
    const r = await runCli(['run', file, '--dir', dir]);
    expect(r.code).toBe(1); // one task failed
    ended = /session (pf\.\S+)/.exec(r.stderr + r.stdout)![1]!;
    s = await dashboardOf(path.join(dir, ended));
    if ('path' in chromium) browser = await playwright.launch({ executablePath: chromium.path });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stop(s);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('answers what the page reads, as the service does, with every state timed', async () => {
    const who = await get(s!, '/v1/whoami');
    expect(valid('Whoami', who.body)).toBe(true);
    expect(who.body).toMatchObject({ session: ended, scopes: ['read'], may: { submit: false } });
    const page = await get(s!, '/v1/tasks?offset=0');
    expect(valid('TaskPage', page.body)).toBe(true);
    expect(page.body).toMatchObject({ total: 2, offset: 0 });
    const failed = await get(s!, '/v1/tasks?reason=E_EXIT_CODE&offset=0');
    expect((failed.body.tasks as { uid: string }[]).map((t) => t.uid)).toEqual(['bad']);
    const bad = await get(s!, '/v1/tasks/bad');
    expect(valid('TaskDetail', bad.body)).toBe(true);
    expect(bad.body).toMatchObject({ state: 'FAILED', exitCode: 4, final: true });
    expect(bad.body.description).toMatchObject({ executable: '/bin/sh' });
    // the store has a time for every state the task passed
    const history = bad.body.history as { state: string; ts?: number }[];
    expect(history.every((h) => typeof h.ts === 'number')).toBe(true);
    expect(history.at(-1)!.state).toBe('FAILED');
    const st = await get(s!, '/v1/status?pending=0&running=0');
    expect(st.body).toMatchObject({ state: 'ended', failures: { E_EXIT_CODE: 1 } });
  });

  it('changes nothing and admits only its token', async () => {
    const cancel = await fetch(`${s!.base}/v1/tasks/bad/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s!.token}` },
    });
    expect(cancel.status).toBe(404);
    const submit = await fetch(`${s!.base}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s!.token}`, 'content-type': 'application/json' },
      body: '{"tasks":[]}',
    });
    expect(submit.status).toBe(404);
    expect((await fetch(`${s!.base}/v1/tasks`)).status).toBe(401);
    // its last character changed (to one it is not: a random token may end in 'x')
    const other = s!.token.endsWith('x') ? 'y' : 'x';
    const wrong = await fetch(`${s!.base}/v1/tasks`, {
      headers: { authorization: `Bearer ${s!.token.slice(0, -1)}${other}` },
    });
    expect(wrong.status).toBe(401);
    expect((await fetch(`${s!.base}/dashboard/`)).status).toBe(200);
  });

  ('path' in chromium ? it : it.skip)(
    "shows the ended session's failed task with its output, and no cancel button" +
      ('why' in chromium ? ` (skipped: ${chromium.why})` : ''),
    async () => {
      const p = await browser!.newPage();
      await p.goto(s!.url); // signed in with the token it printed, on the overview
      await p.waitForSelector('#who [data-scopes]', { timeout: 15_000 });
      await p.evaluate(`location.hash = '#/tasks'`);
      await p.waitForSelector('.spacer .row[data-uid="bad"]', { timeout: 15_000 });
      await p.click('.spacer .row[data-uid="bad"]');
      await p.waitForSelector('.reason strong', { timeout: 15_000 });
      expect(await p.textContent('.reason strong')).toBe('E_EXIT_CODE');
      await until(p, `${textOf('#out-stdout')} === 'no\\n'`);
      expect(await p.locator('#cancel').count()).toBe(0);
      await p.close();
    },
    60_000,
  );

  it('follows a session a script still runs: its changes arrive on the event stream', async () => {
    const file = path.join(dir, 'live.json');
    writeFileSync(
      file,
      JSON.stringify({
        pilots: [{ resource: 'local', cores: 1 }],
        tasks: [{ uid: 'long', executable: '/bin/sleep', arguments: ['600'] }],
      }),
    );
    const run = startCli(['run', file, '--dir', dir]);
    let live: Served | undefined;
    try {
      const m = await run.stderrMatch(/session (pf\.\S+)/);
      const session = path.join(dir, m[1]!);
      live = await dashboardOf(session);
      // its store says it runs; the live session's control socket says the session is live
      await eventsUntil(live, 0, /"uid":"long"[^\n]*"state":"AGENT_EXECUTING"/);
      const st = await get(live, '/v1/status?pending=0&running=0');
      expect(st.body.state).toBe('live');
      const page = await get(live, '/v1/tasks?offset=0');
      const from = page.body.events as number;
      expect((await runCli(['cancel', session, 'long'])).code).toBe(0);
      const text = await eventsUntil(live, from, /"uid":"long"[^\n]*"state":"CANCELED"/);
      expect(text).toMatch(new RegExp(`^id: ${from + 1}$`, 'm'));
    } finally {
      await stop(live);
      run.proc.kill('SIGTERM');
      await run.result;
    }
  }, 90_000);
});
