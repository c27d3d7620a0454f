import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { CLI, startCli, type CliResult } from '../../support/cli';
import {
  api,
  readEvents,
  selfSignedCert,
  startServe,
  type LiveService,
  type SseEvent,
} from '../../support/serve';
import { TcpProxy } from '../../support/tcp-proxy';

// The session commands and `pilotfish submit` against a real `pilotfish serve` (its default
// local pilot), through the built CLI in child processes.

/** The environment of a CLI run: ours, without a server or token the shell may have set. */
function envWith(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ['PILOTFISH_SERVER', 'PILOTFISH_TOKEN', 'PILOTFISH_CA']) delete env[k];
  return { ...env, ...extra };
}

/** Runs the built CLI to its end, `input` on its stdin (empty: closed at once). */
function cli(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: envWith(opts.env),
      timeout: 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

/** Whether `events` hold a notification of task `uid` in one of `states`. */
function reached(events: readonly SseEvent[], uid: string, ...states: string[]): boolean {
  return events.some(
    (e) => e.event === 'task' && e.data.uid === uid && states.includes(e.data.state as string),
  );
}

/** Waits (on the service's events, from the first) until task `uid` reaches one of `states`. */
async function until(s: LiveService, uid: string, ...states: string[]): Promise<void> {
  await readEvents(s, { until: (evs) => reached(evs, uid, ...states), timeoutMs: 60_000 });
}

/** A shell command that prints `one`, waits for `gate` to exist, then prints `two`, `three`. */
function gated(uid: string, gate: string): Record<string, unknown> {
  const script = `echo one; while [ ! -e '${gate}' ]; do sleep 0.05; done; echo two; echo three`;
  return { uid, executable: '/bin/sh', arguments: ['-c', script] };
}

/** A port of loopback nobody listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('pilotfish commands with --server', () => {
  let dir: string;
  let s: LiveService;
  let tokenFile: string;
  const srv = (): string[] => ['--server', s.url, '--token-file', tokenFile];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'pf-cli-server-'));
    s = await startServe(path.join(dir, 'svc'));
    tokenFile = path.join(dir, 'svc', 'admin.token');
  }, 60_000);

  afterAll(async () => {
    s?.cli.proc.kill('SIGTERM');
    await s?.cli.result;
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('submit from a file with --wait: the uids on stdout, the end per state, exit 1 as one FAILED', async () => {
    const file = path.join(dir, 'workload.json');
    writeFileSync(
      file,
      JSON.stringify({
        tasks: [
          { uid: 'w-ok', executable: '/bin/true' },
          { uid: 'w-bad', executable: '/bin/false' },
        ],
      }),
    );
    const r = await cli(['submit', ...srv(), file, '--wait']);
    expect([r.code, r.stdout]).toEqual([1, 'w-ok\nw-bad\n']);
    expect(r.stderr).toBe('pilotfish submit: 2 tasks ended: DONE 1, FAILED 1\n');
  }, 60_000);

  it('submit from stdin (PILOTFISH_SERVER, PILOTFISH_TOKEN) with --json --wait: exit 0, all DONE', async () => {
    const tasks = [1, 2, 3].map((i) => ({
      name: 'stdin-batch',
      executable: '/bin/echo',
      arguments: [`${i}`],
    }));
    const r = await cli(['submit', '-', '--json', '--wait'], {
      env: { PILOTFISH_SERVER: s.url, PILOTFISH_TOKEN: s.token },
      input: JSON.stringify(tasks),
    });
    expect([r.code, r.stderr]).toEqual([0, 'pilotfish submit: 3 tasks ended: DONE 3\n']);
    const doc = JSON.parse(r.stdout) as { tasks: { uid: string; name: string }[]; states: object };
    expect(doc.tasks).toHaveLength(3);
    expect(doc.tasks.map((t) => t.name)).toEqual(['stdin-batch', 'stdin-batch', 'stdin-batch']);
    expect(doc.states).toEqual({ DONE: 3 });
  }, 60_000);

  it("submit --wait ends at the workload's timeoutS: what had not ended, exit 3", async () => {
    const gate = path.join(dir, 'slow.gate'); // never made: canceled below
    const input = JSON.stringify({ timeoutS: 1, tasks: [gated('slow', gate)] });
    const r = await cli(['submit', ...srv(), '--wait'], { input });
    expect([r.code, r.stdout]).toEqual([3, 'slow\n']);
    expect(r.stderr).toMatch(
      /^pilotfish submit: the workload's timeoutS \(1 s\) passed before its 1 task ended: [A-Z_]+ 1\n$/,
    );
    expect((await api(s, 'POST', '/v1/tasks/slow/cancel')).status).toBe(200);
  }, 30_000);

  it('submit checks every description before it sends any: the JSON paths, exit 2', async () => {
    const input = JSON.stringify({
      tasks: [
        { name: 'never-sent', executable: '/bin/true' },
        { executable: 7, bogus: true },
      ],
    });
    const r = await cli(['submit', ...srv()], { input });
    expect([r.code, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toContain('/tasks/1/executable must be string');
    expect(r.stderr).toContain("/tasks/1 must not have property 'bogus'");
    const listed = await api(s, 'GET', '/v1/tasks?name=never-sent');
    expect(listed.body).toEqual({ tasks: [] });
  }, 30_000);

  it('submit of a batch the service refuses: its error with the paths in the input, exit 1', async () => {
    const first = await cli(['submit', ...srv()], {
      input: JSON.stringify({ uid: 'taken', executable: '/bin/true' }),
    });
    expect([first.code, first.stdout]).toEqual([0, 'taken\n']);
    const r = await cli(['submit', ...srv()], {
      input: JSON.stringify([
        { uid: 'fresh-1', executable: '/bin/true' },
        { uid: 'taken', executable: '/bin/false' },
      ]),
    });
    expect([r.code, r.stdout]).toEqual([1, '']);
    expect(r.stderr).toBe(
      "pilotfish: E_UID_TAKEN: a task of another description has uid 'taken'\n" +
        '  /1/uid is the uid of a task with another description\n' +
        'pilotfish submit: batch 1 of 1 (tasks 0 to 1 of stdin) was not submitted\n',
    );
  }, 30_000);

  it('status --server prints the service session as status does, and --json its document', async () => {
    const text = await cli(['status', ...srv()]);
    expect([text.code, text.stderr]).toEqual([0, '']);
    expect(text.stdout).toMatch(
      new RegExp(
        `^session ${s.session.replace(/\./g, '\\.')} \\(live, pid \\d+\\)\\npilots:\\n  pilot\\.0000  local  `,
      ),
    );
    const json = await cli(['status', ...srv(), '--json', '--pending', '0']);
    expect(json.code).toBe(0);
    const st = JSON.parse(json.stdout) as { session: string; state: string; pending: unknown[] };
    expect([st.session, st.state, st.pending]).toEqual([s.session, 'live', []]);
  }, 30_000);

  it('tail --server -f prints the lines of a running task as it writes them, across a dropped connection', async () => {
    const gate = path.join(dir, 'talker.gate');
    const file = path.join(dir, 'talker.json');
    writeFileSync(file, JSON.stringify([gated('talker', gate)]));
    expect((await cli(['submit', ...srv(), file])).stdout).toBe('talker\n');
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port: Number(new URL(s.url).port) });
    try {
      const tail = startCli(
        ['tail', '--server', `http://${proxy.address}`, '--token-file', tokenFile, 'talker', '-f'],
        envWith(),
      );
      await tail.stdoutMatch(/^one\n/);
      proxy.cut(); // the stream drops: tail goes on from the byte it had (Last-Event-ID)
      proxy.restore();
      writeFileSync(gate, '');
      const r = await tail.result;
      expect([r.code, r.stdout, r.stderr]).toEqual([0, 'one\ntwo\nthree\n', '']);
      expect(proxy.accepted).toBeGreaterThanOrEqual(2);
    } finally {
      await proxy.close();
    }
    const whole = await cli(['tail', ...srv(), 'talker']);
    expect([whole.code, whole.stdout]).toEqual([0, 'one\ntwo\nthree\n']);
    const json = await cli(['tail', ...srv(), 'talker', '--json']);
    expect(json.stdout.split('\n')[0]).toBe('{"task":"talker","stream":"stdout","line":"one"}');
    const none = await cli(['tail', ...srv(), 'no-such-task']);
    expect([none.code, none.stderr]).toEqual([
      1,
      "pilotfish: E_NOT_FOUND: no task 'no-such-task' in this session\n",
    ]);
  }, 60_000);

  it('explain --server: what a waiting task waits for, and why one that can never fit failed', async () => {
    const gate = path.join(dir, 'holder.gate');
    const tasks = [
      gated('holder', gate),
      { uid: 'dependent', executable: '/bin/true', after: ['holder'] },
      { uid: 'huge', executable: '/bin/true', coresPerRank: 1000 },
    ];
    expect((await api(s, 'POST', '/v1/tasks', { tasks })).status).toBe(201);
    try {
      await until(s, 'huge', 'FAILED');
      await until(s, 'holder', 'AGENT_EXECUTING');
      const pending = await cli(['explain', ...srv(), 'dependent']);
      expect([pending.code, pending.stderr]).toEqual([0, '']);
      expect(pending.stdout).toMatch(
        /^dependent TMGR_SCHEDULING for .*: waiting for dependencies: holder/,
      );
      const json = await cli(['explain', ...srv(), 'dependent', '--json']);
      const e = JSON.parse(json.stdout) as { uid: string; waiting: { kind: string } };
      expect([e.uid, e.waiting.kind]).toEqual(['dependent', 'dependencies']);
      const huge = await cli(['explain', ...srv(), 'huge']);
      expect(huge.code).toBe(0);
      expect(huge.stdout).toMatch(
        /^huge FAILED for .*: E_NEVER_FITS: task asks 1 rank\(s\) x 1000 cores/,
      );
    } finally {
      writeFileSync(gate, '');
    }
  }, 60_000);

  it('cancel --server cancels a running task; an ended one and an unknown uid: exit 1', async () => {
    const gate = path.join(dir, 'never.gate'); // never made: it runs until canceled
    expect((await api(s, 'POST', '/v1/tasks', { tasks: [gated('victim', gate)] })).status).toBe(
      201,
    );
    await until(s, 'victim', 'AGENT_EXECUTING');
    const r = await cli(['cancel', ...srv(), 'victim']);
    expect([r.code, r.stdout, r.stderr]).toEqual([0, 'canceled: victim\n', '']);
    await until(s, 'victim', 'CANCELED');
    const again = await cli(['cancel', ...srv(), 'victim', 'nobody', '--json']);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toEqual({
      canceled: [],
      unknown: ['nobody'],
      final: ['victim'],
    });
  }, 60_000);

  it('a missing token is a usage error naming both ways (exit 2); a wrong one exit 1', async () => {
    const none = await cli(['status', '--server', s.url]);
    expect([none.code, none.stdout]).toEqual([2, '']);
    expect(none.stderr).toMatch(/--token-file FILE.*PILOTFISH_TOKEN/);
    const wrong = await cli(['status', '--server', s.url], {
      env: { PILOTFISH_TOKEN: 'pft_wrong' },
    });
    expect([wrong.code, wrong.stdout, wrong.stderr]).toEqual([
      1,
      '',
      'pilotfish: E_UNAUTHORIZED: the token is not valid here\n',
    ]);
  }, 30_000);

  it('a server that does not answer is not live: exit 4', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const file = path.join(dir, 'one.json');
    writeFileSync(file, JSON.stringify({ executable: '/bin/true' }));
    for (const args of [
      ['status'],
      ['tail', 't', '-f'],
      ['cancel', 't'],
      ['explain', 't'],
      ['submit', file],
    ]) {
      const r = await cli([...args, '--server', url], { env: { PILOTFISH_TOKEN: 'pft_any' } });
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 4, stdout: '' });
      expect(r.stderr).toMatch(
        /^pilotfish: no server answers at http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED.*\(not live\)\n/,
      );
    }
  }, 60_000);

  it.each([
    [['status', 'pf.20260101.000000.abcdef'], /a SESSION or --server/],
    [['tail', 'pf.20260101.000000.abcdef', 'task.000000'], /give the UID alone/],
    [['explain'], /missing argument 'uid'/],
    [['cancel', 'pf.20260101.000000.abcdef', 'task.000000'], /a SESSION or --server/],
  ])('%j with --server is wrong usage: exit 2', async (args, message) => {
    const r = await cli([...args, '--server', 'http://127.0.0.1:9'], {
      env: { PILOTFISH_TOKEN: 'pft_any' },
    });
    expect([r.code, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toMatch(message);
  });

  it.each([
    [['tail'], /missing SESSION and UID \(or --server URL and the UID\)/],
    [['explain', 'task.000000'], /missing UID/],
    [['submit', '-'], /missing --server URL \(or PILOTFISH_SERVER\)/],
  ])('%j with neither a session nor --server is wrong usage: exit 2', async (args, message) => {
    const r = await cli(args);
    expect([r.code, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toMatch(message);
  });

  it('talks https with --ca (or PILOTFISH_CA), refuses an untrusted certificate, --watch ends with the service', async () => {
    const { cert, key } = selfSignedCert(dir);
    const tls = await startServe(path.join(dir, 'tls'), ['--tls-cert', cert, '--tls-key', key]);
    try {
      expect(tls.url).toMatch(/^https:\/\/127\.0\.0\.1:/);
      const args = [
        'status',
        '--server',
        tls.url,
        '--token-file',
        path.join(dir, 'tls', 'admin.token'),
      ];
      const ok = await cli([...args, '--ca', cert]);
      expect([ok.code, ok.stderr]).toEqual([0, '']);
      expect(ok.stdout).toMatch(/^session pf\.\S+ \(live/);
      const untrusted = await cli(args);
      expect([untrusted.code, untrusted.stdout]).toEqual([1, '']);
      expect(untrusted.stderr).toMatch(
        /^pilotfish: E_TLS: the certificate of https:\/\/127\.0\.0\.1:\d+ is not trusted .*--ca FILE or PILOTFISH_CA\n$/,
      );
      const watch = startCli(
        [...args, '--watch', '--interval', '0.2'],
        envWith({ PILOTFISH_CA: cert }),
      );
      await watch.stdoutMatch(/ live tasks=0 /);
      tls.cli.proc.kill('SIGTERM');
      const r = await watch.result;
      expect([r.code, r.stderr]).toEqual([0, `pilotfish: the service at ${tls.url} has stopped\n`]);
    } finally {
      tls.cli.proc.kill('SIGTERM');
      await tls.cli.result;
    }
  }, 90_000);
});
