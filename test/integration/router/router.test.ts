import { afterEach, describe, expect, it } from '@jest/globals';
import * as http from 'node:http';
import * as path from 'node:path';
import type { RouterModel } from '../../../src/generated';
import { startRouter, type ModelRouter } from '../../../src/router/router';
import { formatProfile } from '../../../src/cli/profile-table';
import { statusOf } from '../../../src/cli/session-info';
import { formatStatus } from '../../../src/cli/status-format';
import { profileReport } from '../../../src/profile/intervals';
import { readProfile } from '../../../src/profile/read';
import { renderTimeline } from '../../../src/profile/timeline/page';
import { fixtures, type Fixture } from '../../support/session-fixture';

// The model router over a real session: a local pilot with one (declared) GPU, models that
// are service tasks running a stand-in model server (test/support/model-server.js: it loads
// for a set time, answers /health, streams tokens), requests over real HTTP with fetch.

const SERVER = path.resolve(__dirname, '../../support/model-server.js');

function model(name: string, extra: Partial<RouterModel> = {}, args: string[] = []): RouterModel {
  return {
    name,
    service: {
      executable: process.execPath,
      arguments: [SERVER, '--name', name, '--load-ms', '200', ...args],
      gpusPerRank: 1,
      service: { port: 'auto', ready: { http: '/health' }, startupTimeoutS: 30 },
    },
    ...extra,
  };
}

interface Answer {
  status: number;
  body: { model?: string; pid?: number; served?: number; tag?: string; error?: { code: string } };
  replica: string | null;
}

async function chat(
  r: ModelRouter,
  modelName: string,
  opts: { tag?: string; priority?: number; tokens?: number } = {},
): Promise<Answer> {
  const res = await fetch(`${r.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${r.token}`,
      'content-type': 'application/json',
      ...(opts.tag !== undefined ? { 'x-tag': opts.tag } : {}),
      ...(opts.priority !== undefined ? { 'x-pilotfish-priority': String(opts.priority) } : {}),
    },
    body: JSON.stringify({
      model: modelName,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: opts.tokens ?? 2,
    }),
  });
  return {
    status: res.status,
    body: (await res.json()) as Answer['body'],
    replica: res.headers.get('x-pilotfish-replica'),
  };
}

/** Resolves once `ready()` holds, looked at every 10 ms; rejects after `ms`. */
async function until(ready: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`not in ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const queued = (r: ModelRouter, name: string): number =>
  r.snapshot().models.find((m) => m.name === name)!.queued;
const replicas = (r: ModelRouter, name: string): string[] =>
  r
    .snapshot()
    .models.find((m) => m.name === name)!
    .replicas.map((x) => x.state);

describe('the model router over service tasks', () => {
  const { open } = fixtures();
  let router: ModelRouter | undefined;
  afterEach(async () => {
    await router?.close();
    router = undefined;
  });

  async function routed(models: RouterModel[], swap?: unknown): Promise<Fixture> {
    const fx = await open({ gpus: 1 });
    router = await startRouter(fx.tmgr, fx.pmgr, {
      config: {
        models: [models[0]!, ...models.slice(1)],
        ...(swap !== undefined ? { swap } : {}),
      } as never,
    });
    return fx;
  }

  it('refuses a request without its token, and lists its models', async () => {
    await routed([model('a')]);
    const r = router!;
    const bare = await fetch(`${r.url}/v1/models`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe('Bearer');
    const list = await fetch(`${r.url}/v1/models`, {
      headers: { authorization: `Bearer ${r.token}` },
    });
    expect(await list.json()).toMatchObject({
      object: 'list',
      data: [{ id: 'a', object: 'model', replicas: [], queued: 0 }],
    });
    expect((await chat(r, 'nope')).body.error).toMatchObject({ code: 'E_UNKNOWN_MODEL' });
  }, 60_000);

  it('refuses a body over 16 MiB with 413, declared or sent in chunks, and serves the next', async () => {
    await routed([model('a')]);
    const r = router!;
    const big = Buffer.alloc(17 * 1024 * 1024, 0x20);
    const send = (chunked: boolean) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(
          `${r.url}/v1/chat/completions`,
          {
            method: 'POST',
            headers: {
              authorization: `Bearer ${r.token}`,
              'content-type': 'application/json',
              ...(chunked ? {} : { 'content-length': big.length }),
            },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        // the router may close the connection before all of it is sent
        req.once('error', (e: NodeJS.ErrnoException) =>
          e.code === 'EPIPE' || e.code === 'ECONNRESET' ? undefined : reject(e),
        );
        if (chunked) for (let i = 0; i < 17; i++) req.write(big.subarray(i << 20, (i + 1) << 20));
        else req.write(big);
        req.end();
      });
    expect(await send(false)).toBe(413);
    expect(await send(true)).toBe(413);
    expect((await chat(r, 'a')).status).toBe(200);
  }, 60_000);

  it('swaps two models that do not fit on one GPU together, every request answered', async () => {
    await routed([model('a'), model('b')]);
    const r = router!;
    const first = await chat(r, 'a');
    expect(first).toMatchObject({ status: 200, body: { model: 'a' } });
    const second = await chat(r, 'b');
    expect(second).toMatchObject({ status: 200, body: { model: 'b' } });
    expect(replicas(r, 'a')).toEqual([]); // a was stopped to make room
    const third = await chat(r, 'a');
    expect(third).toMatchObject({ status: 200, body: { model: 'a' } });
    expect(third.body.pid).not.toBe(first.body.pid); // loaded again
  }, 120_000);

  it('shows its models, replicas and swaps in status, and in the profile and timeline once ended', async () => {
    const fx = await routed([model('a'), model('b')]);
    const r = router!;
    expect((await chat(r, 'a')).status).toBe(200);
    expect((await chat(r, 'b')).status).toBe(200);
    const live = await statusOf(fx.session.dir);
    expect(live.routers).toEqual([
      {
        url: r.url,
        models: [
          expect.objectContaining({
            name: 'a',
            loads: 1,
            swaps: 0,
            lost: 0,
            served: 1,
            replicas: [],
          }),
          expect.objectContaining({
            name: 'b',
            loads: 1,
            swaps: 1,
            served: 1,
            replicas: [
              expect.objectContaining({ state: 'ready', pilot: fx.pilot.uid, inFlight: 0 }),
            ],
          }),
        ],
      },
    ]);
    const b = live.routers![0]!.models[1]!;
    expect(b.lastLoadMs).toBeGreaterThanOrEqual(200); // the stand-in's own load time
    expect(formatStatus(live, Date.now())).toMatch(
      /router http:\/\/127\.0\.0\.1:\d+: 2 models\n {2}a: 0 replicas, 0 queued, 0 in flight; 1 loads \(last [\d.]+ m?s, mean [\d.]+ m?s, max [\d.]+ m?s\), 0 swaps, 0 lost, 1 served\n {2}b: 1 replicas, .*1 swaps, 0 lost, 1 served\n {4}\S+ ready on pilot\.0000 node \S+ at \S+, 0 in flight/,
    );
    await router!.close();
    router = undefined;
    await fx.session.close();
    const ended = await statusOf(fx.session.dir);
    expect(ended.routers?.[0]?.models.map((m) => [m.name, m.loads, m.swaps, m.lost])).toEqual([
      ['a', 1, 0, 0],
      ['b', 1, 1, 0],
    ]);
    const profile = await readProfile(fx.session.dir);
    const [pa, pb] = profile.models!;
    expect(pa!.replicas).toEqual([
      expect.objectContaining({ pilot: fx.pilot.uid, why: 'room', expected: true }),
    ]);
    expect(pb!.swaps).toEqual([{ ts: expect.any(Number), stopped: ['a'] }]);
    expect(pb!.replicas[0]).toMatchObject({ why: 'close', expected: true }); // with the router
    const rep = pb!.replicas[0]!;
    // its load time as the core measured it, its start and readiness as journaled (a ms apart)
    expect(Math.abs(rep.ready! - rep.started! - rep.loadMs!)).toBeLessThanOrEqual(5);
    expect(formatProfile(profile, profileReport(profile).utilization)).toMatch(
      /models:\n {2}a: 1 replicas, 1 loaded \(load [\d.]+ s to [\d.]+ s\), 0 swaps, 0 lost\n {4}\S+ on pilot\.0000, ready in [\d.]+ s, served [\d.]+ s, ended \(room\)/,
    );
    const page = renderTimeline(profile);
    expect(page).toContain('<h2>Models</h2>');
    expect(page).toMatch(/<title>a \S+: loading [\d.]+ s<\/title>/);
    expect(page).toContain('<title>swap: b in, a out</title>');
  }, 120_000);

  it('follows a matrix of three: a and b together, c alone', async () => {
    const cpu = (name: string): RouterModel => {
      const m = model(name);
      return { ...m, service: { ...m.service, gpusPerRank: 0 } };
    };
    await routed([cpu('a'), cpu('b'), cpu('c')], {
      policy: 'matrix',
      sets: [['a', 'b'], ['c']],
    });
    const r = router!;
    expect((await chat(r, 'a')).body.model).toBe('a');
    expect((await chat(r, 'b')).body.model).toBe('b');
    expect([replicas(r, 'a'), replicas(r, 'b')]).toEqual([['ready'], ['ready']]);
    const states = (): string[][] => ['a', 'b', 'c'].map((m) => replicas(r, m));
    const gone = (...ms: string[]): boolean => ms.every((m) => replicas(r, m).length === 0);
    expect((await chat(r, 'c')).body.model).toBe('c');
    // stopped before c started, or still stopping (their ends are heard a little later)
    expect(
      states()[0]!
        .concat(states()[1]!)
        .every((x) => x === 'stopping'),
    ).toBe(true);
    await until(() => gone('a', 'b'), 30_000, 'a and b stopped');
    expect(states()).toEqual([[], [], ['ready']]);
    expect((await chat(r, 'b')).body.model).toBe('b');
    await until(() => gone('c'), 30_000, 'c stopped');
    expect(states()).toEqual([[], ['ready'], []]);
  }, 120_000);

  it('answers 50 requests to a loading model in order of priority, then arrival', async () => {
    await routed([model('a', { concurrency: 1 })]);
    const r = router!;
    const answers: Promise<Answer>[] = [];
    const priority = (i: number): number => [0, 5, 1][i % 3]!;
    for (let i = 0; i < 50; i++) {
      answers.push(chat(r, 'a', { tag: `r${i}`, priority: priority(i), tokens: 0 }));
      await until(
        () => queued(r, 'a') === i + 1 || replicas(r, 'a').includes('ready'),
        10_000,
        `request ${i} queued`,
      );
    }
    const got = await Promise.all(answers);
    expect(got.every((a) => a.status === 200)).toBe(true);
    const order = got.sort((x, y) => x.body.served! - y.body.served!).map((a) => a.body.tag);
    const want = Array.from({ length: 50 }, (_, i) => i)
      .sort((x, y) => priority(y) - priority(x) || x - y)
      .map((i) => `r${i}`);
    expect(order).toEqual(want);
  }, 120_000);

  it('cancels the request to its replica when the client goes away mid-stream', async () => {
    await routed([model('a', {}, ['--token-ms', '50'])]);
    const r = router!;
    const auth = { authorization: `Bearer ${r.token}` };
    const gone = new AbortController();
    const res = await fetch(`${r.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a', stream: true, max_tokens: 1_000 }),
      signal: gone.signal,
    });
    const reader = res.body!.getReader();
    await reader.read(); // its first token came through
    gone.abort();
    // the replica hears its client went away: the stream stops there, not 50 s later
    const heard = await fetch(`${r.url}/v1/router/models/a/raw/cancelled`, {
      headers: auth,
      signal: AbortSignal.timeout(10_000),
    });
    expect(await heard.json()).toEqual({ cancelled: 1 });
    // the stream's end was heard before the replica's (the router aborted it): only the
    // /cancelled request may still be in flight
    const m = r.snapshot().models[0]!;
    expect(m.inFlight).toBeLessThanOrEqual(1);
    expect(m.served).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('streams an answer as it comes; a backend killed mid-stream fails only its own requests', async () => {
    await routed([model('a', { concurrency: 4 }, ['--token-ms', '100'])]);
    const r = router!;
    const res = await fetch(`${r.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${r.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a', stream: true, max_tokens: 600 }),
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const more = async (): Promise<boolean> => {
      const got = (await reader.read()) as { done: boolean; value?: Uint8Array };
      if (got.value !== undefined) text += decoder.decode(got.value, { stream: true });
      return !got.done;
    };
    while (!text.includes('"t2"')) await more();
    // three tokens came of 600 (a minute's worth): the answer is passed on as it comes
    const pid = Number(/"pid":(\d+)/.exec(text)![1]);
    process.kill(pid, 'SIGKILL');
    while (await more());
    expect(text).toMatch(/data: \{"error":\{"code":"E_BACKEND_(LOST|ERROR)"/);
    expect(text).not.toContain('[DONE]');
    const next = await chat(r, 'a');
    expect(next).toMatchObject({ status: 200, body: { model: 'a' } });
    expect(next.body.pid).not.toBe(pid); // a replacement
  }, 120_000);

  it('moves a replica to a pilot with time left before its own drains: no request fails', async () => {
    // the first pilot ends after 18 s; the replica starts there (the only pilot then)
    const fx = await open({ gpus: 1, cores: 1, runtimeMin: 0.3 });
    router = await startRouter(fx.tmgr, fx.pmgr, {
      config: { models: [model('a', { handoffLeadS: 10, concurrency: 4 })] },
    });
    const r = router;
    const first = await chat(r, 'a');
    expect(first.status).toBe(200);
    const [second] = await fx.pmgr.submitPilots([
      { resource: 'local', gpus: 1, cores: 1, runtimeMin: 5 },
    ]);
    // a steady load, two at a time, until the first pilot has ended
    const ended = fx.pmgr.waitPilots({ uids: [fx.pilot.uid], timeoutMs: 60_000 });
    let over = false;
    void ended.finally(() => (over = true));
    const answers: Answer[] = [];
    const lane = async (): Promise<void> => {
      while (!over) answers.push(await chat(r, 'a', { tokens: 0 }));
    };
    await Promise.all([lane(), lane()]);
    await ended;
    const failed = answers.filter((a) => a.status !== 200);
    expect(failed.slice(0, 3)).toEqual([]);
    const pids = new Set(answers.map((a) => a.body.pid));
    expect(pids.size).toBe(2); // served by the first replica, then by its replacement only
    expect(answers.at(-1)!.body.pid).not.toBe(first.body.pid);
    const snap = r.snapshot().models[0]!.replicas;
    expect(snap.map((x) => [x.state, x.pilot])).toEqual([['ready', second!.uid]]);
    expect(answers.length).toBeGreaterThan(100);
  }, 120_000);

  it('stops a replica idle past its TTL', async () => {
    await routed([model('a', { idleTtlS: 0.5 })]);
    const r = router!;
    expect((await chat(r, 'a')).status).toBe(200);
    await until(() => replicas(r, 'a').length === 0, 30_000, 'the idle replica stopped');
  }, 60_000);

  it('unloads a model on request and answers once its process is gone', async () => {
    await routed([model('a')]);
    const r = router!;
    const { body } = await chat(r, 'a');
    const res = await fetch(`${r.url}/v1/router/models/a/unload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${r.token}` },
    });
    expect(res.status).toBe(200);
    expect(() => process.kill(body.pid!, 0)).toThrow(); // gone
    expect(replicas(r, 'a')).toEqual([]);
  }, 60_000);
});
