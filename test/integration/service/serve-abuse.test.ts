import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as net from 'node:net';
import {
  api,
  finalStates,
  readEvents,
  serveInTempDir,
  stopServe,
  type LiveService,
} from '../../support/serve';

// `pilotfish serve` as an intruder and a crowd meet it: 10,000 malformed requests (bad JSON,
// bodies too large, headers that never end, junk on the wire) while a legitimate client submits,
// and 200 event-stream clients at once. Nothing crashes, no legitimate task is lost.

/**
 * Writes `bytes` on a new connection; resolves with the status of the reply (0 when the
 * server closed it without one), and closes it.
 */
function raw(url: string, bytes: string | Buffer, opts: { end?: boolean } = {}): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const sock = net.connect(Number(port), hostname);
    let got = '';
    let done = false;
    const finish = (status: number): void => {
      if (done) return;
      done = true;
      sock.destroy();
      resolve(status);
    };
    sock.on('connect', () => {
      sock.write(bytes);
      if (opts.end === true) sock.end();
    });
    sock.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (m !== null) finish(Number(m[1]));
    });
    sock.on('error', () => finish(0));
    sock.on('close', () => finish(0));
  });
}

/** Runs `jobs` with at most `width` at once; resolves with their results in order. */
async function pool<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
  const out: T[] = new Array<T>(jobs.length);
  let next = 0;
  const lanes = Array.from({ length: width }, async () => {
    while (next < jobs.length) {
      const i = next++;
      out[i] = await jobs[i]!();
    }
  });
  await Promise.all(lanes);
  return out;
}

describe('pilotfish serve under abuse', () => {
  let dir: string;
  let s: LiveService;

  beforeAll(async () => ({ dir, s } = await serveInTempDir('pf-serve-abuse-')), 60_000);
  afterAll(() => stopServe(s, dir), 60_000);

  it('takes 10,000 malformed requests without a crash and loses no legitimate task', async () => {
    const { host } = new URL(s.url);
    const auth = `authorization: Bearer ${s.token}\r\n`;
    const post = (body: string | Buffer, headers = ''): Buffer =>
      Buffer.concat([
        Buffer.from(
          `POST /v1/tasks HTTP/1.1\r\nhost: ${host}\r\n${auth}content-type: application/json\r\n` +
            `content-length: ${Buffer.byteLength(body)}\r\n${headers}\r\n`,
        ),
        Buffer.from(body),
      ]);
    // headers that never end, held open all through: they must not starve anyone. The server
    // may end them only as a request that took too long (its requestTimeout, 60 s: a run on a
    // loaded machine can outlast it), with a 408, never any other way.
    const slow = Array.from({ length: 50 }, () => {
      const { hostname, port } = new URL(s.url);
      const sock = net.connect(Number(port), hostname);
      const seen = { reply: '', closed: false };
      sock.on('data', (d: Buffer) => (seen.reply += d.toString('latin1')));
      sock.on('close', () => (seen.closed = true));
      sock.on('error', () => undefined);
      sock.write(`POST /v1/tasks HTTP/1.1\r\nhost: ${host}\r\n${auth}x-slow: `);
      return { sock, seen };
    });
    const kinds: { want: number[]; send: () => Promise<number> }[] = [
      // not JSON, JSON of the wrong shape, descriptions that break the schema
      { want: [400], send: () => raw(s.url, post('{"tasks":[')) },
      { want: [400], send: () => raw(s.url, post('\u0000\u00ff garbage')) },
      { want: [400], send: () => raw(s.url, post('{"tasks":{"0":1}}')) },
      { want: [400], send: () => raw(s.url, post('{"tasks":[{"executable":7,"cores":-1}]}')) },
      { want: [400], send: () => raw(s.url, post('[]'.repeat(10))) },
      // the wrong content type
      {
        want: [415],
        send: () =>
          raw(
            s.url,
            `POST /v1/tasks HTTP/1.1\r\nhost: ${host}\r\n${auth}content-type: text/plain\r\ncontent-length: 2\r\n\r\n{}`,
          ),
      },
      // a body larger than the limit, said up front; one that lies about its length
      {
        want: [413],
        send: () =>
          raw(
            s.url,
            `POST /v1/tasks HTTP/1.1\r\nhost: ${host}\r\n${auth}content-type: application/json\r\ncontent-length: 999999999\r\n\r\n{"tasks":[`,
          ),
      },
      {
        want: [400],
        send: () =>
          raw(
            s.url,
            `POST /v1/tasks HTTP/1.1\r\nhost: ${host}\r\n${auth}content-type: application/json\r\ncontent-length: 5\r\n\r\n{"tasks":[]}`,
            { end: true },
          ),
      },
      // junk on the wire, a head too large, an unknown route, no token
      { want: [400, 0], send: () => raw(s.url, '\u0016\u0003\u0001 not http at all\r\n\r\n') },
      {
        want: [431, 400, 0],
        send: () =>
          raw(s.url, `GET /v1/tasks HTTP/1.1\r\nhost: ${host}\r\nx: ${'a'.repeat(70_000)}\r\n\r\n`),
      },
      {
        want: [404],
        send: () =>
          raw(
            s.url,
            `GET /v1/nothing/${'z'.repeat(3000)} HTTP/1.1\r\nhost: ${host}\r\n${auth}\r\n`,
          ),
      },
      {
        want: [401],
        send: () =>
          raw(s.url, `POST /v1/tasks HTTP/1.1\r\nhost: ${host}\r\ncontent-length: 2\r\n\r\n{}`),
      },
    ];
    const bad = Array.from({ length: 10_000 }, (_, i) => kinds[i % kinds.length]!);
    // meanwhile, a client that means well: 500 tasks in batches of 50
    const good = (async () => {
      for (let b = 0; b < 10; b++) {
        const tasks = Array.from({ length: 50 }, (_, i) => ({
          uid: `ok.${b}.${i}`,
          executable: '/bin/true',
        }));
        const r = await api(s, 'POST', '/v1/tasks', { tasks });
        expect(r.status).toBe(201);
      }
    })();
    const statuses = await pool(
      bad.map((k) => k.send),
      40,
    );
    await good;
    const wrong = statuses
      .map((st, i) => ({ st, want: bad[i]!.want, i }))
      .filter((x) => !x.want.includes(x.st));
    expect(wrong.slice(0, 5)).toEqual([]);

    // the slow ones held their sockets (or timed out as requests), and the server served
    // everyone else
    const ended = slow.map(({ seen }) => seen).filter((x) => x.closed || x.reply !== '');
    expect(ended.filter((x) => !x.reply.startsWith('HTTP/1.1 408 '))).toEqual([]);
    const events = await readEvents(s, {
      until: (evs) => finalStates(evs, 'ok.').size === 500,
      timeoutMs: 120_000,
    });
    const finals = finalStates(events, 'ok.');
    expect([...finals.values()].every((st) => st.length === 1 && st[0] === 'DONE')).toBe(true);
    for (const { sock } of slow) sock.destroy();
    expect((await api(s, 'GET', '/v1/healthz')).status).toBe(200);
    expect(s.cli.proc.exitCode).toBeNull();
  }, 180_000);

  it('answers bytes that are not HTTP with the API error shape, then closes', async () => {
    const { hostname, port } = new URL(s.url);
    const reply = (bytes: string): Promise<string> =>
      new Promise((resolve) => {
        const sock = net.connect(Number(port), hostname);
        let got = '';
        sock.on('connect', () => sock.write(bytes));
        sock.on('data', (d: Buffer) => (got += d.toString('latin1')));
        sock.on('error', () => undefined);
        sock.on('close', () => resolve(got));
      });
    const body = (raw: string): unknown => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
    const junk = await reply('\u0016\u0003\u0001 not http at all\r\n\r\n');
    expect(junk).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(body(junk)).toEqual({
      error: { code: 'E_BAD_REQUEST', message: expect.stringContaining('HTTP/1.1') },
    });
    const big = await reply(
      `GET /v1/tasks HTTP/1.1\r\nhost: x\r\nx: ${'a'.repeat(70_000)}\r\n\r\n`,
    );
    expect(big).toMatch(/^HTTP\/1\.1 431 /);
    expect(body(big)).toEqual({
      error: { code: 'E_HEADERS_TOO_LARGE', message: expect.stringContaining('16 KiB') },
    });
  }, 60_000);

  it('streams the same events to 200 clients at once, none missing or repeated', async () => {
    const base = (await api(s, 'GET', '/v1/tasks?limit=1')).status;
    expect(base).toBe(200);
    const readers = Array.from({ length: 200 }, () =>
      readEvents(s, {
        until: (evs) => finalStates(evs, 'crowd.').size === 100,
        timeoutMs: 120_000,
      }),
    );
    const tasks = Array.from({ length: 100 }, (_, i) => ({
      uid: `crowd.${i}`,
      executable: '/bin/true',
    }));
    expect((await api(s, 'POST', '/v1/tasks', { tasks })).status).toBe(201);
    const all = await Promise.all(readers);
    const first = all[0]!.map((e) => e.id);
    expect(first).toEqual(first.map((_, i) => i + 1)); // from the start, no gap, no repeat
    for (const evs of all) {
      const ids = evs.map((e) => e.id);
      // each stopped once it saw the crowd end: the same events up to where it stopped
      expect(ids).toEqual(first.slice(0, ids.length));
      expect(finalStates(evs, 'crowd.').size).toBe(100);
    }
  }, 180_000);
});
