/**
 * A live `pilotfish serve` with a big session in it, for the dashboard's browser test and its
 * benchmark (bench/dashboard.ts): one local pilot of 6 cores; `failed` tasks that failed (each
 * wrote `out-<i>` and `err-<i>`, then exited 3); four running ones (`gate` and `victim` sleep,
 * `follower` prints each line appended to `followerLog`, `web` is a service task: an HTTP
 * server on a port of its own); and `pending` tasks that wait for
 * `gate` (`after`), so they stay pending however many there are. A read-only token beside the
 * admin one. stop() ends the service (its tasks end CANCELED) and removes its directory.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cliScript, startService, type Service } from './serve';

export interface DashboardScenario {
  svc: Service;
  /** A token with the read scope only. */
  readToken: string;
  failed: string[];
  gate: string;
  victim: string;
  follower: string;
  /** The file `follower` prints the lines of, as they are appended. */
  followerLog: string;
  /** How many tasks the session has. */
  total: number;
  api(method: string, route: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  stop(): Promise<void>;
}

const BATCH = 10_000;

export async function dashboardScenario(opts: {
  pending: number;
  failed: number;
}): Promise<DashboardScenario> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-dashboard-'));
  let svc: Service | undefined;
  try {
    svc = await startService(dir, [{ resource: 'local', cores: 6 }]);
    const home = path.join(dir, 'svc');
    const readToken = execFileSync(
      process.execPath,
      [cliScript(), 'serve', '--dir', home, 'token', 'add', '--scope', 'read', '--label', 'look'],
      { encoding: 'utf8' },
    ).trim();
    const api = apiOf(svc);
    const failed = Array.from({ length: opts.failed }, (_, i) => `bad-${i}`);
    await submit(
      api,
      failed.map((uid, i) => ({
        uid,
        name: uid,
        executable: '/bin/sh',
        arguments: ['-c', `echo out-${i}; echo err-${i} >&2; exit 3`],
        labels: { kind: 'bad' },
      })),
    );
    await waitFinal(api, failed);
    const followerLog = path.join(dir, 'follow.log');
    writeFileSync(followerLog, 'first line\n');
    const running = [
      { uid: 'gate', name: 'gate', executable: '/bin/sleep', arguments: ['3600'] },
      { uid: 'victim', name: 'victim', executable: '/bin/sleep', arguments: ['3600'] },
      {
        uid: 'follower',
        name: 'follower',
        executable: '/usr/bin/tail',
        arguments: ['-n', '+1', '-f', followerLog],
      },
      {
        uid: 'web',
        name: 'web',
        mode: 'service',
        executable: '/bin/sh',
        arguments: ['-c', 'exec python3 -m http.server --bind 127.0.0.1 "$PF_PORT"'],
        service: { port: 'auto', ready: { http: '/' } },
      },
    ];
    await submit(api, running);
    await waitRunning(svc, ['gate', 'victim', 'follower', 'web']);
    for (let b = 0; b < opts.pending; b += BATCH) {
      const n = Math.min(BATCH, opts.pending - b);
      await submit(
        api,
        Array.from({ length: n }, (_, i) => ({
          uid: `w-${b + i}`,
          name: `wait-${b + i}`,
          executable: '/bin/true',
          after: ['gate'],
          labels: { batch: String(b / BATCH) },
        })),
      );
    }
    const service = svc;
    return {
      svc,
      readToken,
      failed,
      gate: 'gate',
      victim: 'victim',
      follower: 'follower',
      followerLog,
      total: opts.failed + running.length + opts.pending,
      api,
      stop: async () => {
        await service.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await svc?.stop();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

function apiOf(svc: Service): DashboardScenario['api'] {
  return async (method, route, body) => {
    const r = await fetch(new URL(route, svc.url), {
      method,
      headers: {
        authorization: `Bearer ${svc.token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await r.text();
    return { status: r.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  };
}

async function submit(api: DashboardScenario['api'], tasks: unknown[]): Promise<void> {
  const r = await api('POST', '/v1/tasks', { tasks });
  if (r.status !== 201) throw new Error(`POST /v1/tasks: ${r.status} ${JSON.stringify(r.body)}`);
}

/** Until every task named is final (POST /v1/tasks/wait, a long poll), at most 60 s. */
async function waitFinal(api: DashboardScenario['api'], uids: string[]): Promise<void> {
  let pending = uids;
  const until = Date.now() + 60_000;
  while (pending.length > 0) {
    if (Date.now() > until) throw new Error(`not final in 60 s: ${pending.join(', ')}`);
    const r = await api('POST', '/v1/tasks/wait', { uids: pending, timeoutS: 20 });
    if (r.status !== 200) throw new Error(`wait: ${r.status} ${JSON.stringify(r.body)}`);
    pending = (r.body as { pending: string[] }).pending;
  }
}

/** Until each task named has reached AGENT_EXECUTING, read on GET /v1/events (at most 60 s). */
async function waitRunning(svc: Service, uids: string[]): Promise<void> {
  const left = new Set(uids);
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 60_000);
  try {
    const r = await fetch(new URL('/v1/events', svc.url), {
      headers: { authorization: `Bearer ${svc.token}` },
      signal: abort.signal,
    });
    const text = new TextDecoder();
    let buf = '';
    for await (const chunk of r.body!) {
      buf += text.decode(chunk as Uint8Array, { stream: true });
      const blocks = buf.split('\n\n');
      buf = blocks.pop()!;
      for (const b of blocks) {
        const data = /^data: (.*)$/m.exec(b)?.[1];
        if (data === undefined) continue;
        const n = JSON.parse(data) as { uid: string; state: string };
        if (n.state === 'AGENT_EXECUTING') left.delete(n.uid);
      }
      if (left.size === 0) return;
    }
    throw new Error(`the event stream ended before ${[...left].join(', ')} ran`);
  } catch (e) {
    if (abort.signal.aborted) {
      throw new Error(`not running in 60 s: ${[...left].join(', ')}`, { cause: e });
    }
    throw e;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}
