/**
 * The model router (docs/router.md) in front of one replica, against the same replica reached
 * directly and through Debian's nginx as a reverse proxy (keep-alive upstream, no buffering),
 * in one run. The replica is the stand-in model server of the tests
 * (test/support/model-server.js: it answers at once), a service task on a local pilot of
 * every core; the router runs in this process (`startRouter` on the session), nginx in a
 * child process with a configuration of its own in a temporary directory.
 *
 * - `router_added_latency_ms_p50` / `_p99` (targets ≤ 0.3 ms, ≤ 2 ms): a small
 *   POST /v1/chat/completions, one at a time on one keep-alive connection, 3,000 each way
 *   (quick: 100) after 500 unmeasured (quick: 20), the three ways interleaved request by
 *   request; the percentile through the router less the same percentile direct.
 *   `nginx_added_latency_ms_p50` / `_p99` the same through nginx, and `direct_latency_ms_p50`.
 * - `router_requests_per_s` and `nginx_requests_per_s`: 20,000 requests (quick: 500) over 32
 *   keep-alive connections at once from a child process (so that the client does not share
 *   the router's event loop), in 6 pairs of runs (quick: 2), router then nginx, nginx then
 *   router, and so on; each the median of its runs. `router_vs_nginx` (target ≥ 0.8): the
 *   median of the pairs' ratios (runs side by side: the machine's drift between pairs cancels).
 *
 * - `swap_added_ms_p50` (target ≤ 50 ms): two models that may not run together, asked for in
 *   turn, 20 swaps (quick: 2): request to answer less the replica's own start (its process's
 *   start to its listening, which the stand-in reports; it loads for 300 ms), `p90` beside.
 *
 * - `handoff_answered_fraction` (target 1: no request fails): a session of its own with one
 *   local pilot that ends after 24 s (quick: 15 s), the model's replica on it, then a second
 *   pilot with time left; two requests at a time until the first pilot has ended, the replica
 *   moved meanwhile (make-before-break); `failed` beside it.
 *
 * Without nginx (scripts/bench-deps.sh installs Debian's nginx-light; `npm run bench` runs it),
 * the nginx figures and the ratio are skipped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { PilotManager, Session, TaskManager, startRouter, type RouterModel } from '../src';
import {
  median,
  nowNs,
  percentile,
  removeTree,
  secondsBetween,
  sig,
  withLocalPilot,
  type BenchOptions,
  type Figure,
} from './harness';
import { peersForRun } from './references';

export const name = 'router';
export const description =
  'the model router in front of one replica: added latency against direct and against nginx, requests per second against nginx';

const log = (line: string): void => void process.stderr.write(`bench router: ${line}\n`);
const BODY = JSON.stringify({
  model: 'm',
  max_tokens: 0,
  messages: [{ role: 'user', content: 'hi' }],
});

const NGINX_FIGURES = [
  'nginx_added_latency_ms_p50',
  'nginx_added_latency_ms_p99',
  'nginx_requests_per_s',
  'router_vs_nginx',
];

interface Sizes {
  latency: number;
  latencyWarm: number;
  load: number;
  connections: number;
  /** Runs through the router and through nginx, alternated (ABBA...). */
  pairs: number;
  swaps: number;
}
const FULL: Sizes = {
  latency: 3_000,
  latencyWarm: 500,
  load: 20_000,
  connections: 32,
  pairs: 6,
  swaps: 20,
};
const QUICK: Sizes = {
  latency: 100,
  latencyWarm: 20,
  load: 500,
  connections: 8,
  pairs: 2,
  swaps: 2,
};
/** The stand-in's load time in the swap figures (it listens after this). */
const LOAD_MS = 300;

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const n = quick ? QUICK : FULL;
  await handoffFigures(quick, emit);
  await withLocalPilot('pf-bench-router-', async ({ tmgr, pmgr }) => {
    const router = await startRouter(tmgr, pmgr, {
      config: {
        models: [
          {
            name: 'm',
            concurrency: 256,
            service: {
              executable: process.execPath,
              arguments: [modelServer(), '--name', 'm'],
              service: { port: 'auto', ready: { http: '/health' } },
            },
          },
        ],
      },
    });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-nginx-'));
    let nginx: { url: string; proc: ChildProcess } | undefined;
    try {
      const auth = `Bearer ${router.token}`;
      const first = await post(`${router.url}/v1/chat/completions`, auth);
      if (first !== 200) throw new Error(`router: the first request got ${first}`);
      const backend = router.snapshot().models[0]!.replicas[0]!.endpoint!;
      const peers = await peersForRun(quick, log);
      if (peers.nginx === undefined) nginx = await startNginx(dir, backend);
      else for (const m of NGINX_FIGURES) log(`skipped ${m}: ${peers.nginx}`);
      const ways: [string, string, string | undefined][] = [
        ['direct', backend, undefined],
        ['router', router.url, auth],
        ...(nginx !== undefined
          ? [['nginx', nginx.url, undefined] as [string, string, undefined]]
          : []),
      ];
      await latencyFigures(n, ways, emit);
      await loadFigures(n, ways.slice(1), emit);
      await swapFigures(n, tmgr, pmgr, emit);
    } finally {
      nginx?.proc.kill('SIGTERM');
      await router.close();
      removeTree(dir);
    }
  });
}

async function latencyFigures(
  n: Sizes,
  ways: [string, string, string | undefined][],
  emit: (f: Figure) => void,
): Promise<void> {
  const agents = ways.map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const times: number[][] = ways.map(() => []);
  try {
    for (let i = 0; i < n.latencyWarm + n.latency; i++) {
      for (const [k, [, url, auth]] of ways.entries()) {
        const t0 = nowNs();
        const status = await post(`${url}/v1/chat/completions`, auth, agents[k]);
        if (status !== 200) throw new Error(`router: a request got ${status}`);
        if (i >= n.latencyWarm) times[k]!.push(secondsBetween(t0, nowNs()) * 1000);
      }
    }
  } finally {
    for (const a of agents) a.destroy();
  }
  const context = {
    requests: n.latency,
    after_unmeasured: n.latencyWarm,
    timed:
      'POST /v1/chat/completions, one at a time on one keep-alive connection, the ways interleaved',
  };
  const direct = (q: number): number => percentile(times[0]!, q);
  emit({ metric: 'direct_latency_ms_p50', value: sig(direct(0.5)), unit: 'ms', ...context });
  for (const [k, [way]] of ways.entries()) {
    if (k === 0) continue;
    for (const [suffix, q] of [
      ['p50', 0.5],
      ['p99', 0.99],
    ] as const) {
      const added = percentile(times[k]!, q) - direct(q);
      const metric = `${way}_added_latency_ms_${suffix}`;
      // noise can put a quick run's percentile under direct's: not a figure
      if (added <= 0) {
        log(`skipped ${metric}: ${sig(added)} ms is not positive (${n.latency} requests)`);
        continue;
      }
      emit({
        metric,
        value: sig(added),
        unit: 'ms',
        [`${way}_ms`]: sig(percentile(times[k]!, q)),
        direct_ms: sig(direct(q)),
        ...context,
      });
    }
  }
}

async function loadFigures(
  n: Sizes,
  ways: [string, string, string | undefined][],
  emit: (f: Figure) => void,
): Promise<void> {
  // the two ways in pairs, each pair's order the other's reverse (ABBA...): a ratio per pair
  // of runs next to each other, so that the machine's drift between pairs (a shared VM's
  // pace moves by a fifth from one second to the next) cancels; the median of the pairs'
  const pairs = ways.length > 1 ? n.pairs : 1;
  const runs: number[][] = ways.map(() => []);
  const ratios: number[] = [];
  for (let p = 0; p < pairs; p++) {
    const order = ways.length === 1 ? [0, 0] : p % 2 === 0 ? [0, 1] : [1, 0];
    for (const k of order) {
      const [, url, auth] = ways[k]!;
      runs[k]!.push(await load(`${url}/v1/chat/completions`, auth, n));
    }
    if (ways.length > 1) ratios.push(runs[0]![p]! / runs[1]![p]!);
  }
  const context = {
    requests: n.load,
    connections: n.connections,
    timed: 'first request to the last answer, from a child process',
  };
  const rates = runs.map((r) => median(r));
  for (const [k, [way]] of ways.entries()) {
    emit({
      metric: `${way}_requests_per_s`,
      value: sig(rates[k]!),
      unit: '1/s',
      runs: runs[k]!.map((r) => sig(r)).join(','),
      ...context,
    });
  }
  if (ways.length > 1) {
    emit({
      metric: 'router_vs_nginx',
      value: sig(median(ratios)),
      unit: 'ratio',
      pairs: ratios.map((r) => sig(r)).join(','),
      router_requests_per_s: sig(rates[0]!),
      nginx_requests_per_s: sig(rates[1]!),
      ...context,
    });
  }
}

/**
 * Two models that may not run together (a `group` of one at a time), asked for in turn: each
 * request's time to its answer less the replica's own time from its process's start to its
 * listening (the stand-in reports it), i.e. what the swap adds: stopping the other, starting
 * the service task, hearing it ready, routing.
 */
async function swapFigures(
  n: Sizes,
  tmgr: TaskManager,
  pmgr: PilotManager,
  emit: (f: Figure) => void,
): Promise<void> {
  const model = (name: string): RouterModel => ({
    name,
    service: {
      executable: process.execPath,
      arguments: [modelServer(), '--name', name, '--load-ms', String(LOAD_MS)],
      // ready on its line: a poll of /health would add up to its 100 ms interval
      service: { port: 'auto', ready: { pattern: `${name} loaded` } },
    },
  });
  const router = await startRouter(tmgr, pmgr, {
    config: {
      models: [model('a'), model('b')],
      swap: { policy: 'group', groups: [{ name: 'one-at-a-time', members: ['a', 'b'] }] },
    },
  });
  try {
    const added: number[] = [];
    const loads: number[] = [];
    for (let i = 0; i <= n.swaps; i++) {
      const t0 = nowNs();
      const got = await ask(router.url, `Bearer ${router.token}`, i % 2 === 0 ? 'a' : 'b');
      const ms = secondsBetween(t0, nowNs()) * 1000;
      if (i === 0) continue; // the first loads a with nothing to stop
      added.push(ms - got.loadedMs);
      loads.push(got.loadedMs);
    }
    emit({
      metric: 'swap_added_ms_p50',
      value: sig(percentile(added, 0.5)),
      unit: 'ms',
      swaps: n.swaps,
      p90: sig(percentile(added, 0.9)),
      model_load_ms_p50: sig(percentile(loads, 0.5)),
      timed:
        "request to answer, less the replica's own start (its process's start to its listening)",
    });
  } finally {
    await router.close();
  }
}

/**
 * A steady load (two requests at a time) on one model while its replica's pilot reaches its
 * end, a second pilot with time left beside it: the fraction of the requests answered 200.
 */
async function handoffFigures(quick: boolean, emit: (f: Figure) => void): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-handoff-'));
  const session = await Session.open({ dir });
  try {
    const pmgr = new PilotManager(session);
    const tmgr = new TaskManager(session);
    // the replica starts on the one pilot there is; it ends after 24 s (quick: 15 s)
    const runtimeMin = quick ? 0.25 : 0.4;
    const [short] = await pmgr.submitPilots([{ resource: 'local', cores: 1, runtimeMin }]);
    const router = await startRouter(tmgr, pmgr, {
      config: {
        models: [
          {
            name: 'm',
            handoffLeadS: quick ? 8 : 12,
            concurrency: 4,
            service: {
              executable: process.execPath,
              arguments: [modelServer(), '--name', 'm', '--load-ms', String(LOAD_MS)],
              service: { port: 'auto', ready: { pattern: 'm loaded' } },
            },
          },
        ],
      },
    });
    try {
      const auth = `Bearer ${router.token}`;
      await ask(router.url, auth, 'm');
      await pmgr.submitPilots([{ resource: 'local', cores: 1, runtimeMin: 10 }]);
      const ended = pmgr.waitPilots({ uids: [short!.uid], timeoutMs: 120_000 });
      let over = false;
      void ended.finally(() => (over = true));
      const pids = new Set<number>();
      let answered = 0;
      let failed = 0;
      const lane = async (): Promise<void> => {
        while (!over) {
          const res = await fetch(`${router.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: auth, 'content-type': 'application/json' },
            body: BODY,
          });
          const body = (await res.json()) as { pid?: number };
          if (res.status === 200) answered++;
          else failed++;
          if (body.pid !== undefined) pids.add(body.pid);
        }
      };
      await Promise.all([lane(), lane()]);
      await ended;
      if (pids.size < 2) throw new Error('router: no handoff happened (one replica served all)');
      emit({
        metric: 'handoff_answered_fraction',
        value: sig(answered / (answered + failed), 6),
        unit: 'ratio',
        requests: answered + failed,
        failed,
        replicas: pids.size,
        timed: "two requests at a time from the replica's start to its pilot's end",
      });
    } finally {
      await router.close();
    }
  } finally {
    await session.close();
    removeTree(dir);
  }
}

/** A POST for `model`: what the stand-in says of itself. */
async function ask(url: string, auth: string, model: string): Promise<{ loadedMs: number }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 0, messages: [] }),
  });
  const body = (await res.json()) as { loadedMs?: number; model?: string };
  if (res.status !== 200 || body.model !== model || typeof body.loadedMs !== 'number') {
    throw new Error(`router: a swap to ${model} got ${res.status} ${JSON.stringify(body)}`);
  }
  return { loadedMs: body.loadedMs };
}

/** A POST of BODY: its status, the answer read whole. */
function post(url: string, auth: string | undefined, agent?: http.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(BODY),
      ...(auth !== undefined ? { authorization: auth } : {}),
    };
    const req = http.request(
      url,
      { method: 'POST', headers, ...(agent ? { agent } : {}) },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.once('error', reject);
    req.end(BODY);
  });
}

/** The load generator, in a child process: `n.load` POSTs over `n.connections`; requests/s. */
const LOAD = `
const http = require('node:http');
const [url, auth, total, width] = [process.argv[1], process.argv[2], +process.argv[3], +process.argv[4]];
const body = ${JSON.stringify(BODY)};
const agent = new http.Agent({ keepAlive: true, maxSockets: width });
const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
if (auth !== '-') headers.authorization = auth;
let sent = 0, bad = 0;
const one = () => new Promise((resolve, reject) => {
  const r = http.request(url, { method: 'POST', headers, agent }, (res) => {
    if (res.statusCode !== 200) bad++;
    res.resume(); res.once('end', resolve);
  });
  r.once('error', reject); r.end(body);
});
const lane = async () => { while (sent < total) { sent++; await one(); } };
const t0 = process.hrtime.bigint();
Promise.all(Array.from({ length: width }, lane)).then(() => {
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  process.stdout.write(JSON.stringify({ rate: total / s, bad }));
  agent.destroy();
}, (e) => { process.stderr.write(String(e)); process.exit(1); });
`;

async function load(url: string, auth: string | undefined, n: Sizes): Promise<number> {
  const args = ['-e', LOAD, url, auth ?? '-', String(n.load), String(n.connections)];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`router: the load generator failed (${code}): ${err}`);
  const { rate, bad } = JSON.parse(out) as { rate: number; bad: number };
  if (bad > 0) {
    throw new Error(`router: ${bad} of ${n.load} requests to ${url} were not answered 200`);
  }
  return rate;
}

/** nginx (from PATH) proxying to `backend`, on a free port of loopback. */
async function startNginx(
  dir: string,
  backend: string,
): Promise<{ url: string; proc: ChildProcess }> {
  const port = await freePort();
  const upstream = backend.replace(/^http:\/\//, '');
  const conf = path.join(dir, 'nginx.conf');
  const temp = (n: string): string => `${n}_temp_path ${path.join(dir, n)};`;
  fs.writeFileSync(
    conf,
    [
      'daemon off;',
      'worker_processes 1;',
      `pid ${path.join(dir, 'nginx.pid')};`,
      `error_log ${path.join(dir, 'error.log')} warn;`,
      'events { worker_connections 1024; }',
      'http {',
      '  access_log off;',
      `  ${temp('client_body')} ${temp('proxy')} ${temp('fastcgi')} ${temp('uwsgi')} ${temp('scgi')}`,
      `  upstream backend { server ${upstream}; keepalive 64; }`,
      `  server { listen 127.0.0.1:${port};`,
      '    location / { proxy_pass http://backend; proxy_http_version 1.1;',
      '      proxy_set_header Connection ""; proxy_buffering off; } }',
      '}',
    ].join('\n'),
  );
  const proc = spawn('nginx', ['-p', dir, '-c', conf], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (await accepts(port)) return { url, proc };
    if (Date.now() > deadline || proc.exitCode !== null) {
      proc.kill('SIGKILL');
      throw new Error(
        `router: nginx did not listen on ${port}: ${readOr(path.join(dir, 'error.log'))}`,
      );
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

function readOr(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').slice(-2_000);
  } catch {
    return '(no error log)';
  }
}

/** The stand-in model server of the tests, from bench/ or from dist/bench/. */
function modelServer(): string {
  for (const p of [
    path.resolve(__dirname, '../test/support/model-server.js'),
    path.resolve(__dirname, '../../test/support/model-server.js'),
  ]) {
    if (fs.existsSync(p)) return p;
  }
  throw new Error('router: test/support/model-server.js not found');
}
