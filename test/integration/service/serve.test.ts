import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../../support/cli';
import { waitForExit } from '../../support/processes';
import {
  api,
  finalStates,
  readEvents,
  readSse,
  selfSignedCert,
  startServe,
  type LiveService,
  serveInTempDir,
  stopServe,
} from '../../support/serve';

// `pilotfish serve` over real HTTP: the built CLI in a child process with a local pilot, and
// real clients (Node's fetch, curl, Debian's python3 with its standard library alone).

/** Sends a request's head (and a little of its body) on a raw socket: the status it gets. */
function rawStatus(url: string, line: string, headers: Record<string, string>): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(port), hostname, () => {
      const all = { host: hostname, 'content-type': 'application/json', ...headers };
      const head = Object.entries(all)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      sock.write(`${line} HTTP/1.1\r\n${head}\r\n{"tasks":[`);
    });
    let got = '';
    sock.on('data', (d: Buffer) => {
      got += d.toString();
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (m !== null) {
        sock.destroy();
        resolve(Number(m[1]));
      }
    });
    sock.on('error', reject);
  });
}

function run(
  file: string,
  args: string[],
  input?: string,
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = execFile(file, args, { timeout: 60_000 }, (e, out, err) =>
      resolve({ code: e === null ? 0 : ((e as { code?: number }).code ?? 1), out, err }),
    );
    if (input !== undefined) child.stdin!.end(input);
  });
}

describe('pilotfish serve', () => {
  let dir: string;
  let s: LiveService;

  beforeAll(async () => ({ dir, s } = await serveInTempDir('pf-serve-')), 60_000);
  afterAll(() => stopServe(s, dir), 60_000);

  it('is open for its health only: 401 without a token, 403 with a read token on submit, revoked at once', async () => {
    expect(await api({ url: s.url }, 'GET', '/v1/healthz')).toEqual({
      status: 200,
      body: { ok: true, session: s.session },
    });
    const none = await fetch(`${s.url}/v1/tasks`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="pilotfish"');
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('E_UNAUTHORIZED');
    expect((await api({ url: s.url, token: 'pft_nothing' }, 'GET', '/v1/tasks')).status).toBe(401);
    const made = await runCli([
      'serve',
      'token',
      'add',
      '--dir',
      dir,
      '--scope',
      'read',
      '--label',
      'test',
    ]);
    expect(made.code).toBe(0);
    const read = { url: s.url, token: made.stdout.trim() };
    expect((await api(read, 'GET', '/v1/tasks')).status).toBe(200);
    const refused = await api(read, 'POST', '/v1/tasks', { tasks: [{ executable: '/bin/true' }] });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: { code: 'E_FORBIDDEN' } });
    const listed = await runCli(['serve', '--dir', dir, 'token', 'list']);
    const id = listed.stdout
      .split('\n')
      .find((l) => l.includes('read'))!
      .split(/\s+/)[0]!;
    expect((await runCli(['serve', '--dir', dir, 'token', 'revoke', id])).code).toBe(0);
    // from the next request on: the service looks at its token file at each one
    expect((await api(read, 'GET', '/v1/tasks')).status).toBe(401);
    expect(fs.statSync(path.join(dir, 'tokens.json')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dir, 'admin.token')).mode & 0o777).toBe(0o600);
  });

  it('refuses bad requests with 400 naming the path, and loses nothing', async () => {
    const bad = await api(s, 'POST', '/v1/tasks', {
      tasks: [{ executable: '/bin/true' }, { executable: 7, sandbox: 'yes', x: 1 }],
    });
    expect(bad.status).toBe(400);
    const issues = (bad.body.error as { issues: { path: string; message: string }[] }).issues;
    expect(issues).toEqual(
      expect.arrayContaining([
        { path: '/tasks/1/executable', message: 'must be string', in: 'body' },
        { path: '/tasks/1', message: "must not have property 'x'", in: 'body' },
      ]),
    );
    const notJson = await api(s, 'POST', '/v1/tasks', '{"tasks": [');
    expect(notJson.status).toBe(400);
    expect(JSON.stringify(notJson.body)).not.toMatch(/at .*\.js/); // no stack
    // a body over the limit is refused from its Content-Length, before it is read
    expect(
      await rawStatus(s.url, 'POST /v1/tasks', {
        authorization: `Bearer ${s.token}`,
        'content-length': String(17 << 20),
      }),
    ).toBe(413);
    expect((await api(s, 'GET', '/v1/tasks?limit=abc')).body).toMatchObject({
      error: { code: 'E_VALIDATION', issues: [{ path: '/limit', in: 'querystring' }] },
    });
    expect((await api(s, 'GET', '/v1/nothing')).status).toBe(404);
    // the valid task of the refused batch was not taken either: a batch is taken whole or not
    expect((await api(s, 'GET', '/v1/tasks')).body.tasks).toEqual([]);
  });

  it('runs 1,000 tasks submitted in batches with fetch, followed on the event stream to the end', async () => {
    for (let b = 0; b < 4; b++) {
      const tasks = Array.from({ length: 250 }, (_, i) => ({
        uid: `b${b}.${i}`,
        executable: '/bin/true',
        labels: { batch: String(b) },
      }));
      const r = await api(s, 'POST', '/v1/tasks', { tasks });
      expect(r.status).toBe(201);
      expect((r.body.tasks as unknown[]).length).toBe(250);
    }
    const events = await readEvents(s, {
      until: (evs) => [...finalStates(evs).keys()].filter((u) => u.startsWith('b')).length === 1000,
      timeoutMs: 120_000,
    });
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1)); // no gap, no repeat
    const ended = finalStates(events);
    for (let b = 0; b < 4; b++) {
      for (let i = 0; i < 250; i++) {
        expect(ended.get(`b${b}.${i}`)).toEqual(['DONE']);
      }
    }
    const page = await api(s, 'GET', '/v1/tasks?label=batch=2&limit=100');
    expect((page.body.tasks as { uid: string }[]).map((t) => t.uid).slice(0, 2)).toEqual([
      'b2.0',
      'b2.1',
    ]);
    const next = await api(
      s,
      'GET',
      `/v1/tasks?label=batch=2&limit=100&after=${String(page.body.next)}`,
    );
    expect((next.body.tasks as { uid: string }[])[0]!.uid).toBe('b2.100');
    const done = await api(s, 'GET', '/v1/tasks?state=DONE&limit=1000');
    expect((done.body.tasks as unknown[]).length).toBe(1000);
  }, 150_000);

  it('a second submit with the same uid is the same task, not a second run; another description with it is a 409', async () => {
    const task = {
      uid: 'once',
      executable: '/bin/sh',
      arguments: ['-c', 'echo ran >> ../once.log'],
    };
    const first = await api(s, 'POST', '/v1/tasks', { tasks: [task] });
    const again = await api(s, 'POST', '/v1/tasks', { tasks: [task] });
    expect([first.status, again.status]).toEqual([201, 200]);
    expect((again.body.tasks as { uid: string }[])[0]!.uid).toBe('once');
    const other = await api(s, 'POST', '/v1/tasks', {
      tasks: [{ ...task, arguments: ['-c', 'true'] }],
    });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({
      error: { code: 'E_UID_TAKEN', issues: [{ path: '/tasks/0/uid' }] },
    });
    const events = await readEvents(s, { until: (evs) => finalStates(evs).has('once') });
    expect(finalStates(events).get('once')!).toEqual(['DONE']);
    const got = await api(s, 'GET', '/v1/tasks/once');
    expect(got.body).toMatchObject({ uid: 'once', state: 'DONE', attempt: 1, final: true });
  }, 60_000);

  it("follows a task's output as events that go on from Last-Event-ID, and reads it from a byte offset", async () => {
    const lines = Array.from({ length: 6 }, (_, i) => `line ${i} ${'é'.repeat(i)}`);
    const script = lines.map((l) => `echo '${l}'; sleep 0.2`).join('; ');
    const r = await api(s, 'POST', '/v1/tasks', {
      tasks: [{ uid: 'printer', executable: '/bin/sh', arguments: ['-c', script] }],
    });
    expect(r.status).toBe(201);
    const route = '/v1/tasks/printer/output?follow=true';
    const first = await readSse<string>(s, route, { until: (evs) => evs.length >= 2 });
    const rest = await readSse<string>(s, route, {
      lastEventId: first.at(-1)!.id,
      until: (evs) => evs.some((e) => e.event === 'end'),
    });
    const out = [...first, ...rest].filter((e) => e.event === 'output');
    const text = out.map((e) => e.data).join('');
    expect(text).toBe(lines.map((l) => `${l}\n`).join(''));
    // each id is the byte offset after its data
    let at = 0;
    for (const e of out) expect(e.id).toBe((at += Buffer.byteLength(e.data)));
    expect(rest.at(-1)).toMatchObject({ event: 'end', data: 'DONE' });
    const from = Buffer.byteLength(`${lines[0]}\n`);
    const res = await fetch(`${s.url}/v1/tasks/printer/output?offset=${from}`, {
      headers: { authorization: `Bearer ${s.token}` },
    });
    expect(await res.text()).toBe(text.slice(lines[0]!.length + 1));
    expect(res.headers.get('x-output-bytes')).toBe(String(Buffer.byteLength(text)));
  }, 60_000);

  it('serves metrics in the Prometheus format to a read token', async () => {
    const res = await fetch(`${s.url}/metrics`, {
      headers: { authorization: `Bearer ${s.token}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const value = (name: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`${name} `));
      if (line === undefined) throw new Error(`no ${name} in:\n${text}`);
      return Number(line.split(' ')[1]);
    };
    expect(value('pilotfish_tasks{state="DONE"}')).toBeGreaterThanOrEqual(1000);
    expect(value('pilotfish_tasks_ended_total{state="DONE"}')).toBeGreaterThanOrEqual(1000);
    expect(value('pilotfish_pilot_cores{pilot="pilot.0000"}')).toBe(os.availableParallelism());
    expect(value('pilotfish_pilot_cores_busy{pilot="pilot.0000"}')).toBeGreaterThanOrEqual(0);
    // every task so far has ended: no queue anywhere
    expect(value('pilotfish_tasks_queued{pilot="pilot.0000"}')).toBe(0);
    expect(value('pilotfish_tasks_queued{pilot=""}')).toBe(0);
    expect(text).toMatch(
      /pilotfish_http_requests_total\{method="POST",route="\/v1\/tasks",status="201"\} \d+/,
    );
    expect(text).toContain('pilotfish_process_resident_memory_bytes');
    expect(text).toContain('pilotfish_nodejs_eventloop_lag_seconds');
    expect((await fetch(`${s.url}/metrics`)).status).toBe(401);
  });

  it('serves curl and a Python program that uses only its standard library', async () => {
    const auth = `Authorization: Bearer ${s.token}`;
    const curl = await run(
      'curl',
      [
        '-sS',
        '-H',
        auth,
        '-H',
        'content-type: application/json',
        '--data-binary',
        '@-',
        `${s.url}/v1/tasks`,
      ],
      JSON.stringify({ tasks: [{ uid: 'by-curl', executable: '/bin/echo', arguments: ['curl'] }] }),
    );
    expect(curl.code).toBe(0);
    expect(JSON.parse(curl.out)).toMatchObject({ tasks: [{ uid: 'by-curl' }] });
    const py = `
import json, sys, urllib.request
url, token = sys.argv[1], sys.argv[2]
head = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
body = json.dumps({"tasks": [{"uid": "by-python", "executable": "/bin/echo", "arguments": ["py"]}]}).encode()
urllib.request.urlopen(urllib.request.Request(url + "/v1/tasks", body, head, method="POST"))
stream = urllib.request.urlopen(urllib.request.Request(url + "/v1/events", headers=head))
for raw in stream:
    line = raw.decode().rstrip("\\n")
    if line.startswith("data: "):
        n = json.loads(line[6:])
        if n["uid"] == "by-python" and n["state"] == "DONE":
            print(json.dumps(json.load(urllib.request.urlopen(urllib.request.Request(url + "/v1/tasks/by-python", headers=head)))))
            break
`;
    const python = await run('/usr/bin/python3', ['-c', py, s.url, s.token]);
    expect(python.err).toBe('');
    expect(JSON.parse(python.out)).toMatchObject({
      uid: 'by-python',
      state: 'DONE',
      stdout: 'py\n',
    });
  }, 60_000);
});

describe('pilotfish serve killed with SIGKILL and started again', () => {
  it('resumes the session: every task ends once, the event stream goes on from Last-Event-ID without a gap or a repeat', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-serve-kill-'));
    let s = await startServe(dir);
    try {
      const tasks = Array.from({ length: 200 }, (_, i) => ({
        uid: `k${i}`,
        executable: '/bin/sh',
        arguments: ['-c', `sleep 0.05; echo k${i} >> ${path.join(dir, 'ran.log')}`],
      }));
      const printer = {
        uid: 'printer',
        executable: '/bin/sh',
        arguments: ['-c', 'for i in $(seq 1 40); do echo p$i; sleep 0.1; done'],
      };
      expect((await api(s, 'POST', '/v1/tasks', { tasks: [printer, ...tasks] })).status).toBe(201);
      const route = '/v1/tasks/printer/output?follow=true';
      const printed = await readSse<string>(s, route, { until: (evs) => evs.length >= 5 });
      const before = await readEvents(s, { until: (evs) => finalStates(evs).size >= 30 });
      const gone = [...finalStates(before).keys()].find((u) => u !== 'printer')!;
      expect((await api(s, 'DELETE', `/v1/tasks/${gone}`)).status).toBe(200);
      s.cli.proc.kill('SIGKILL');
      await s.cli.result;
      const last = before.at(-1)!.id;
      s = await startServe(dir);
      const after = await readEvents(s, {
        lastEventId: last,
        until: (evs) => finalStates([...before, ...evs]).size === 201,
        timeoutMs: 120_000,
      });
      expect((await api(s, 'GET', `/v1/tasks/${gone}`)).status).toBe(404); // still deleted
      const later = await readSse<string>(s, route, {
        lastEventId: printed.at(-1)!.id,
        until: (evs) => evs.some((e) => e.event === 'end'),
      });
      const text = [...printed, ...later].filter((e) => e.event === 'output').map((e) => e.data);
      expect(text.join('')).toBe(Array.from({ length: 40 }, (_, i) => `p${i + 1}\n`).join(''));
      const all = [...before, ...after];
      expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));
      const ended = finalStates(all);
      for (const t of [printer, ...tasks]) {
        expect(ended.get(t.uid)!).toEqual(['DONE']);
      }
      const ran = fs.readFileSync(path.join(dir, 'ran.log'), 'utf8').trim().split('\n');
      expect(ran.length).toBe(200); // none ran twice
      expect(new Set(ran).size).toBe(200);
    } finally {
      s.cli.proc.kill('SIGTERM');
      await s.cli.result;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});

describe('pilotfish serve whose stderr nobody reads any more', () => {
  // started by a script that has exited, or piped into a `tee` that was killed: its next line
  // on stderr meets EPIPE, and that must not end it without closing its session
  it('still stops cleanly on SIGTERM: its task canceled, its process gone', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-serve-epipe-'));
    const pidFile = path.join(dir, 'sleep.pid');
    let s = await startServe(dir);
    try {
      const long = {
        uid: 'long',
        executable: '/bin/sh',
        arguments: ['-c', `echo $$ > ${pidFile}; echo up; exec sleep 3600`],
      };
      expect((await api(s, 'POST', '/v1/tasks', { tasks: [long] })).status).toBe(201);
      await readSse<string>(s, '/v1/tasks/long/output?follow=true', {
        until: (evs) => evs.some((e) => e.event === 'output' && e.data.includes('up')),
      });
      s.cli.proc.stderr!.destroy();
      s.cli.proc.kill('SIGTERM');
      const r = await s.cli.result;
      expect({ code: r.code, signal: r.signal }).toEqual({ code: 0, signal: null });
      await waitForExit(Number(fs.readFileSync(pidFile, 'utf8')), 30_000);
      s = await startServe(dir); // the same session, resumed: the task ended then, not now
      const got = await api(s, 'GET', '/v1/tasks/long');
      expect(got.body).toMatchObject({ uid: 'long', state: 'CANCELED' });
    } finally {
      await stopServe(s, dir);
    }
  }, 120_000);
});

describe('pilotfish serve on other listeners', () => {
  let dir: string;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-serve-listen-'));
  });

  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('refuses an address other than loopback without TLS, by name', async () => {
    const r = await runCli(['serve', '--dir', path.join(dir, 'open'), '--host', '0.0.0.0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('would send tokens and tasks in clear over the network');
    expect(fs.existsSync(path.join(dir, 'open', 'sessions'))).toBe(false);
  });

  it('serves a Unix socket only its owner can open, tokens still required', async () => {
    const sock = path.join(dir, 'api.sock');
    const s = await startServe(path.join(dir, 'unix'), ['--socket', sock]);
    try {
      expect(s.url).toBe(`unix:${sock}`);
      expect(fs.statSync(sock).mode & 0o777).toBe(0o600);
      const health = await run('curl', ['-sS', '--unix-socket', sock, 'http://x/v1/healthz']);
      expect(JSON.parse(health.out)).toEqual({ ok: true, session: s.session });
      const none = await run('curl', [
        '-s',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        '--unix-socket',
        sock,
        'http://x/v1/tasks',
      ]);
      expect(none.out).toBe('401');
      const listed = await run('curl', [
        '-sS',
        '--unix-socket',
        sock,
        '-H',
        `Authorization: Bearer ${s.token}`,
        'http://x/v1/tasks',
      ]);
      expect(JSON.parse(listed.out)).toEqual({ tasks: [] });
      // the CLI takes the URL the service printed
      const tokenFile = path.join(dir, 'unix', 'admin.token');
      const status = await runCli([
        'status',
        '--server',
        s.url,
        '--token-file',
        tokenFile,
        '--json',
      ]);
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ state: 'live' });
    } finally {
      s.cli.proc.kill('SIGTERM');
      await s.cli.result;
    }
  }, 60_000);

  it('serves HTTPS on any address with a certificate', async () => {
    const { cert, key } = selfSignedCert(dir);
    const s = await startServe(path.join(dir, 'tls'), [
      '--host',
      '0.0.0.0',
      '--tls-cert',
      cert,
      '--tls-key',
      key,
    ]);
    try {
      const port = new URL(s.url).port;
      expect(s.url).toMatch(/^https:\/\//);
      const r = await run('curl', [
        '-sS',
        '--cacert',
        cert,
        '-H',
        `Authorization: Bearer ${s.token}`,
        `https://127.0.0.1:${port}/v1/tasks`,
      ]);
      expect(r.err).toBe('');
      expect(JSON.parse(r.out)).toEqual({ tasks: [] });
      const plain = await run('curl', ['-sS', `http://127.0.0.1:${port}/v1/healthz`]);
      expect(plain.out).not.toContain('"ok":true');
    } finally {
      s.cli.proc.kill('SIGTERM');
      await s.cli.result;
    }
  }, 60_000);
});
