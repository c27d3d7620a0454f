/**
 * The jobs service (`pilotfish serve`, docs/service.md) over real HTTP: the built CLI serves in a
 * child process (`node dist/src/cli/main.js serve --port 0 --pilots FILE`, one local pilot with
 * every core), and this process is its client, as a user's program is: node:http with a
 * keep-alive Agent, one connection per stream. Figures, in this order in one run:
 *
 * - `http_exec_tasks_per_s`: N `/bin/true` (2,000; 200 quick) POSTed to /v1/tasks in batches of
 *   1,000, one request after the other, first POST to the last final state read on /v1/events.
 *   `inprocess_exec_tasks_per_s`: the same N in a TypeScript session of this process with a
 *   local pilot of the same description (`submitTasks` + `waitTasks`, as bench/e2e.ts; the
 *   harness's withLocalPilot and runAll), and `http_vs_inprocess` (HTTP over in-process; target
 *   ≥ 0.9). Both pilots are up the whole time (the other one idle); each path gets one unmeasured
 *   warm-up batch of N/4, then the runs alternate http, in-process, in-process, http (quick: one
 *   each), so an order effect falls on both alike; each figure is the mean of its runs, listed
 *   in `runs`.
 * - `submit_rtt_ms_p50` / `_p99` (target p50 ≤ 2 ms): one task per POST (1,000; 30 quick), one
 *   after the other on one keep-alive connection, request written to reply read, after 2,000
 *   unmeasured ones (20 quick): on a fresh service the single-task path is still being
 *   compiled, and the p50 falls from ~3 ms over the first few hundred to ~1 ms after ~2,000 (as
 *   in bench/functions.ts), so the figure is the steady state, and `submit_rtt_cold_ms_p50`
 *   (the first 200 of the unmeasured ones) is reported beside it. The tasks run meanwhile (a
 *   user submitting one at a time has them run), and are waited final before the next step.
 * - `accept_tasks_per_s` (target ≥ 50,000/s): 20 batches of 1,000 (quick: 3 of 200) POSTed one
 *   after the other, first POST to the last 201, after 10 unmeasured ones (quick: 1): the
 *   first ~30 batches a fresh service takes still run partly in code V8 has not optimized yet
 *   (their mean POST falls from 16-31 ms to 12-15 ms), so the figure is the steady state of a
 *   service that has been taking work, and `accept_cold_tasks_per_s` (the unmeasured batches,
 *   timed the same way) is reported beside it. What is timed: parsing, validation,
 *   submitTasks, the reply, and what the session does with a submitted task on the same event
 *   loop between one reply and the next request (its NEW states through the store back to the
 *   TaskManager). The tasks wait (`after`) for a gate task that sleeps, so the pilot runs none
 *   of them while acceptance is measured (30,000 `/bin/true` would keep the 2 cores busy for
 *   ~30 s, and the figure would be of that); the gate is then canceled and they end CANCELED
 *   (E_DEPENDENCY) without running, waited for on /v1/events. `accept_ms_per_batch_p50`: the median POST of those batches (p99
 *   in the context). `server_cpu_us_per_task` in the context: CPU time (user + system, all its
 *   threads, its agent not counted) of the service process over those POSTs, per task.
 * - `events_per_s_1_client` / `events_per_s_100_clients`: the events of one finished batch
 *   (1,000 `/bin/true`; 20 quick: every state change the store keeps of each, ~5 per task, and
 *   whatever else it took meanwhile) replayed from the store: 1 client, then 100 at once, each GET
 *   /v1/events with `Last-Event-ID` just before the batch, read until the batch's last event
 *   id; events delivered per second summed over the clients, first request to the last client
 *   done. Replayed rather than live, so that the figure is what the service can send and not
 *   the rate the pilot makes events at. Every client must get every id of the range once and
 *   in order: a client that lost or repeated one fails the benchmark, it is not a figure.
 *
 * One more client follows /v1/events live from the start to the end: the finals it reads are
 * what the HTTP figures wait for. The service is stopped with SIGTERM (its pilot ends, its
 * session closes) and its directory removed; the in-process session is closed before.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import type { PilotDescription, TaskDescription } from '../src';
import {
  mean,
  median,
  nowNs,
  percentile,
  removeTree,
  runAll,
  secondsBetween,
  sig,
  withLocalPilot,
  type BenchOptions,
  type Figure,
} from './harness';

export const name = 'serve';
export const description =
  'the jobs service over HTTP in a child process: tasks accepted per second, end to end against in-process, submit round trip, event fan-out to 100 clients';

const log = (line: string): void => void process.stderr.write(`bench serve: ${line}\n`);

/** The pilot of both paths: a local one with every core, as the harness's withLocalPilot. */
const PILOT: PilotDescription = { resource: 'local', runtimeMin: 60 };
const TRUE: TaskDescription = { executable: '/bin/true' };
const FINAL = new Set(['DONE', 'FAILED', 'CANCELED']);
const FINAL_STATE = /"state":"(?:DONE|FAILED|CANCELED)"/;
const GATE = 'bench-serve-gate';

interface Sizes {
  exec: number;
  execBatch: number;
  rtt: number;
  /** Unmeasured single-task POSTs before the measured ones. */
  rttWarm: number;
  acceptBatches: number;
  acceptBatch: number;
  /** Unmeasured batches before the measured ones. */
  acceptWarm: number;
  events: number;
  clients: number;
}

const FULL: Sizes = {
  exec: 2_000,
  execBatch: 1_000,
  rtt: 1_000,
  rttWarm: 2_000,
  acceptBatches: 20,
  acceptBatch: 1_000,
  acceptWarm: 10,
  events: 1_000,
  clients: 100,
};
const QUICK: Sizes = {
  exec: 200,
  execBatch: 100,
  rtt: 30,
  rttWarm: 20,
  acceptBatches: 3,
  acceptBatch: 200,
  acceptWarm: 1,
  events: 20,
  clients: 100,
};

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const n = quick ? QUICK : FULL;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-serve-'));
  try {
    const t0 = nowNs();
    const svc = await startService(dir, [PILOT]);
    try {
      const follower = new Follower(svc);
      const api = new Api(svc);
      try {
        await follower.until(() => follower.pilotActive, 60_000, 'the pilot PMGR_ACTIVE');
        log(`service and its pilot up: ${secondsBetween(t0, nowNs()).toFixed(1)} s`);
        const phases: [string, () => Promise<void>][] = [
          ['end to end', () => execFigures(quick, n, api, follower, emit)],
          ['round trips', () => rttFigures(n, api, follower, emit)],
          ['acceptance', () => acceptFigures(n, api, follower, svc.pid, emit)],
          ['events', () => eventFigures(n, api, follower, svc, emit)],
        ];
        for (const [what, phase] of phases) {
          const p0 = nowNs();
          await phase();
          log(`${what}: ${secondsBetween(p0, nowNs()).toFixed(1)} s`);
        }
      } finally {
        api.close();
        follower.close();
      }
    } finally {
      await svc.stop();
    }
  } finally {
    removeTree(dir);
  }
}

// ---- the figures ----------------------------------------------------------------------------

async function execFigures(
  quick: boolean,
  n: Sizes,
  api: Api,
  follower: Follower,
  emit: (f: Figure) => void,
): Promise<void> {
  const runs: Record<'http' | 'inprocess', number[]> = { http: [], inprocess: [] };
  await withLocalPilot('pf-bench-serve-inproc-', async ({ tmgr, pilot }) => {
    const viaHttp = async (k: number): Promise<number> => {
      const t0 = nowNs();
      const uids: string[] = [];
      for (let sent = 0; sent < k; sent += n.execBatch) {
        const size = Math.min(n.execBatch, k - sent);
        uids.push(...(await api.submit(Array.from({ length: size }, () => TRUE))));
      }
      const states = await follower.finals(uids, 600_000);
      const secs = secondsBetween(t0, nowNs());
      expectAll(states, 'DONE', 'http exec');
      return k / secs;
    };
    const inProcess = async (k: number): Promise<number> =>
      k /
      (await runAll(
        'serve',
        tmgr,
        Array.from({ length: k }, () => TRUE),
      ));
    // warm-up: the first tasks of a fresh pilot (and service) pay for V8 compiling their paths
    await viaHttp(Math.max(1, n.exec >> 2));
    await inProcess(Math.max(1, n.exec >> 2));
    const order = quick
      ? (['http', 'inprocess'] as const)
      : (['http', 'inprocess', 'inprocess', 'http'] as const);
    for (const which of order) {
      const rate = which === 'http' ? await viaHttp(n.exec) : await inProcess(n.exec);
      runs[which].push(rate);
      log(`${which} exec: ${sig(rate)} tasks/s`);
    }
    const context = {
      tasks: n.exec,
      cores: pilot.cores,
      order: order.join(','),
    };
    const httpRate = mean(runs.http);
    const inRate = mean(runs.inprocess);
    emit({
      metric: 'http_exec_tasks_per_s',
      value: sig(httpRate),
      unit: '1/s',
      ...context,
      batch: n.execBatch,
      runs: runs.http.map((r) => sig(r)).join(','),
      timed: 'first POST /v1/tasks to the last final state read on /v1/events',
    });
    emit({
      metric: 'inprocess_exec_tasks_per_s',
      value: sig(inRate),
      unit: '1/s',
      ...context,
      runs: runs.inprocess.map((r) => sig(r)).join(','),
      timed: 'submitTasks to the last final callback (waitTasks), in this process',
    });
    emit({
      metric: 'http_vs_inprocess',
      value: sig(httpRate / inRate),
      unit: 'ratio',
      ...context,
      http_exec_tasks_per_s: sig(httpRate),
      inprocess_exec_tasks_per_s: sig(inRate),
    });
  });
}

async function rttFigures(
  n: Sizes,
  api: Api,
  follower: Follower,
  emit: (f: Figure) => void,
): Promise<void> {
  const body = JSON.stringify({ tasks: [TRUE] });
  const rtts: number[] = [];
  const uids: string[] = [];
  for (let i = 0; i < n.rttWarm + n.rtt; i++) {
    const t0 = nowNs();
    const r = await api.request('POST', '/v1/tasks', body);
    rtts.push(secondsBetween(t0, nowNs()) * 1000);
    uids.push(...uidsOf(r, 'POST /v1/tasks'));
  }
  expectAll(await follower.finals(uids, 600_000), 'DONE', 'rtt');
  const warm = rtts.slice(n.rttWarm);
  const timed = 'one task per POST /v1/tasks, sequential on one keep-alive connection';
  for (const [metric, q] of [
    ['submit_rtt_ms_p50', 0.5],
    ['submit_rtt_ms_p99', 0.99],
  ] as const) {
    emit({
      metric,
      value: sig(percentile(warm, q)),
      unit: 'ms',
      requests: n.rtt,
      after_unmeasured: n.rttWarm,
      timed,
    });
  }
  const cold = rtts.slice(0, Math.min(200, n.rttWarm));
  emit({
    metric: 'submit_rtt_cold_ms_p50',
    value: sig(median(cold)),
    unit: 'ms',
    requests: cold.length,
    timed: `${timed}: the first of the unmeasured ones`,
  });
}

async function acceptFigures(
  n: Sizes,
  api: Api,
  follower: Follower,
  pid: number,
  emit: (f: Figure) => void,
): Promise<void> {
  const [gate] = await api.submit([{ uid: GATE, executable: '/bin/sleep', arguments: ['3600'] }]);
  const body = JSON.stringify({
    tasks: Array.from({ length: n.acceptBatch }, () => ({ ...TRUE, after: [GATE] })),
  });
  const uids: string[] = [];
  const post = async (): Promise<number> => {
    const b0 = nowNs();
    const r = await api.request('POST', '/v1/tasks', body);
    uids.push(...uidsOf(r, 'POST /v1/tasks'));
    return secondsBetween(b0, nowNs());
  };
  const coldSecs: number[] = [];
  for (let b = 0; b < n.acceptWarm; b++) coldSecs.push(await post());
  const perBatch: number[] = [];
  const cpu0 = processCpuUs(pid);
  const t0 = nowNs();
  for (let b = 0; b < n.acceptBatches; b++) perBatch.push((await post()) * 1000);
  const secs = secondsBetween(t0, nowNs());
  const cpu = processCpuUs(pid) - cpu0;
  const tasks = n.acceptBatches * n.acceptBatch;
  const all = (n.acceptWarm + n.acceptBatches) * n.acceptBatch;
  if (uids.length !== all) throw new Error(`serve: ${uids.length} of ${all} tasks accepted`);
  // the gate goes: its dependents end CANCELED (E_DEPENDENCY) without running
  const c = await api.request('POST', `/v1/tasks/${gate!}/cancel`);
  if (c.status !== 200) throw new Error(`serve: cancel of the gate: ${c.status} ${c.text}`);
  expectAll(await follower.finals(uids, 600_000), 'CANCELED', 'accept');
  const context = { tasks, batches: n.acceptBatches, batch: n.acceptBatch };
  emit({
    metric: 'accept_tasks_per_s',
    value: sig(tasks / secs),
    unit: '1/s',
    ...context,
    server_cpu_us_per_task: sig(cpu / tasks),
    after_unmeasured: n.acceptWarm,
    timed: 'first POST /v1/tasks to the last 201, one request after the other',
  });
  emit({
    metric: 'accept_cold_tasks_per_s',
    value: sig((n.acceptWarm * n.acceptBatch) / coldSecs.reduce((a, b) => a + b, 0)),
    unit: '1/s',
    tasks: n.acceptWarm * n.acceptBatch,
    batches: n.acceptWarm,
    batch: n.acceptBatch,
    timed: 'the unmeasured batches before those, the same way',
  });
  emit({
    metric: 'accept_ms_per_batch_p50',
    value: sig(median(perBatch)),
    unit: 'ms',
    ...context,
    p99: sig(percentile(perBatch, 0.99)),
  });
}

async function eventFigures(
  n: Sizes,
  api: Api,
  follower: Follower,
  svc: Service,
  emit: (f: Figure) => void,
): Promise<void> {
  await follower.quiet(300);
  const from = follower.lastId;
  const uids = await api.submit(Array.from({ length: n.events }, () => TRUE));
  expectAll(await follower.finals(uids, 600_000), 'DONE', 'events');
  await follower.quiet(300);
  const to = follower.lastId;
  const events = to - from;
  for (const clients of [1, n.clients]) {
    const t0 = nowNs();
    const counts = await Promise.all(
      Array.from({ length: clients }, () => replay(svc, from, to, 120_000)),
    );
    const secs = secondsBetween(t0, nowNs());
    const short = counts.filter((c) => c !== events);
    if (short.length > 0) {
      throw new Error(
        `serve: ${short.length} of ${clients} clients got ${short[0]} of ${events} events`,
      );
    }
    emit({
      metric: clients === 1 ? 'events_per_s_1_client' : `events_per_s_${clients}_clients`,
      value: sig((clients * events) / secs),
      unit: '1/s',
      clients,
      events_per_client: events,
      tasks: n.events,
      seconds: sig(secs),
      timed:
        "a finished batch's events replayed (Last-Event-ID), first GET to the last client done",
    });
  }
}

/** Fails naming the first task of `states` that did not end `want`. */
function expectAll(states: ReadonlyMap<string, string>, want: string, what: string): void {
  for (const [uid, state] of states) {
    if (state !== want) {
      const bad = [...states.values()].filter((s) => s !== want).length;
      throw new Error(
        `serve: ${what}: ${bad} of ${states.size} tasks not ${want} (${uid}: ${state})`,
      );
    }
  }
}

// ---- the service in a child process ---------------------------------------------------------

export interface Service {
  url: URL;
  token: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * The built CLI. Under ts-jest this module is bench/serve.ts: the CLI is the build's
 * (`npm run build`), as it is from dist/bench/serve.js.
 */
export function cliScript(): string {
  for (const p of [
    path.resolve(__dirname, '../src/cli/main.js'),
    path.resolve(__dirname, '../dist/src/cli/main.js'),
  ]) {
    if (fs.existsSync(p)) return p;
  }
  throw new Error(`bench serve: dist/src/cli/main.js not found: run 'npm run build'`);
}

/** `pilotfish serve` on a free port of loopback, `pilots` its pilots; resolves once it serves. */
export async function startService(dir: string, pilots: PilotDescription[]): Promise<Service> {
  const pilotsFile = path.join(dir, 'pilots.json');
  fs.writeFileSync(pilotsFile, JSON.stringify(pilots));
  const home = path.join(dir, 'svc');
  const proc = spawn(
    process.execPath,
    [cliScript(), 'serve', '--dir', home, '--port', '0', '--pilots', pilotsFile],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  const exited = new Promise<string>((resolve) =>
    proc.once('close', (code, signal) => resolve(`${code ?? signal}`)),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`serve: not serving in 60 s: ${stderr}`)),
      60_000,
    );
    proc.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-8_192);
      const m = /serving session \S+ at (\S+) \(API under \/v1/.exec(stderr);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`serve: pilotfish serve ended (${how}): ${stderr}`));
    });
  }).catch(async (e: unknown) => {
    await kill(proc, exited);
    throw e;
  });
  const token = fs.readFileSync(path.join(home, 'admin.token'), 'utf8').trim();
  return { url: new URL(url), token, pid: proc.pid!, stop: () => kill(proc, exited) };
}

/** SIGTERM (the pilot ends, the session closes); SIGKILL if it has not ended in 60 s. */
async function kill(proc: ChildProcess, exited: Promise<string>): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill('SIGTERM');
  const timer = setTimeout(() => {
    log('the service did not stop in 60 s after SIGTERM: SIGKILL');
    proc.kill('SIGKILL');
  }, 60_000);
  await exited;
  clearTimeout(timer);
}

/** CPU time (user + system) of process `pid` itself so far, in microseconds (Linux). */
function processCpuUs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(rest[11]) + Number(rest[12])) * 1e6) / 100; // utime, stime in USER_HZ
  } catch {
    return NaN;
  }
}

// ---- the client -----------------------------------------------------------------------------

interface Reply {
  status: number;
  text: string;
}

/** Requests to the API on one keep-alive connection, one at a time. */
class Api {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  constructor(private readonly svc: Service) {}

  request(method: string, route: string, body?: string): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: this.svc.url.hostname,
          port: this.svc.url.port,
          method,
          path: route,
          agent: this.agent,
          headers: {
            authorization: `Bearer ${this.svc.token}`,
            ...(body !== undefined
              ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
              : {}),
          },
        },
        (res) => {
          res.setEncoding('utf8');
          let text = '';
          res.on('data', (d: string) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /** POSTs `tasks`; resolves with their uids (a reply other than 201 throws). */
  async submit(tasks: TaskDescription[]): Promise<string[]> {
    return uidsOf(
      await this.request('POST', '/v1/tasks', JSON.stringify({ tasks })),
      'POST /v1/tasks',
    );
  }

  close(): void {
    this.agent.destroy();
  }
}

function uidsOf(r: Reply, what: string): string[] {
  if (r.status !== 201) throw new Error(`serve: ${what}: ${r.status} ${r.text.slice(0, 500)}`);
  return (JSON.parse(r.text) as { tasks: { uid: string }[] }).tasks.map((t) => t.uid);
}

/**
 * GET /v1/events from after `from`, handing each event block (the text between blank lines) to
 * `onBlocks`; ends when onBlocks says so, the stream ends, or close().
 */
function openEvents(
  svc: Service,
  from: number,
  onBlocks: (blocks: string[]) => boolean,
): { done: Promise<void>; close(): void } {
  let req: http.ClientRequest | undefined;
  const done = new Promise<void>((resolve, reject) => {
    req = http.get(
      {
        host: svc.url.hostname,
        port: svc.url.port,
        path: '/v1/events',
        agent: false,
        headers: { authorization: `Bearer ${svc.token}`, 'last-event-id': String(from) },
      },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`serve: GET /v1/events: ${res.statusCode}`));
          res.resume();
          return;
        }
        res.setEncoding('utf8');
        let pending = '';
        res.on('data', (chunk: string) => {
          pending += chunk;
          const blocks = pending.split('\n\n');
          pending = blocks.pop()!;
          if (onBlocks(blocks)) {
            req!.destroy();
            resolve();
          }
        });
        // ended, or destroyed by close()
        res.on('close', () => resolve());
        res.on('error', () => resolve());
      },
    );
    req.on('error', (e) => (req!.destroyed ? resolve() : reject(e)));
  });
  return { done, close: () => req?.destroy() };
}

/** The id of an event block, or undefined for a comment (heartbeat). */
function idOf(block: string): number | undefined {
  if (!block.startsWith('id: ')) return undefined;
  return Number(block.slice(4, block.indexOf('\n')));
}

/**
 * Reads the events after `from` up to `to`; resolves with how many it got. An id out of order
 * (a lost or a repeated event) throws.
 */
async function replay(svc: Service, from: number, to: number, timeoutMs: number): Promise<number> {
  let last = from;
  let count = 0;
  let broken: Error | undefined;
  const stream = openEvents(svc, from, (blocks) => {
    for (const b of blocks) {
      const id = idOf(b);
      if (id === undefined) continue;
      if (id !== last + 1) {
        broken = new Error(`serve: a client got event ${id} after ${last}`);
        return true;
      }
      last = id;
      count++;
    }
    return last >= to;
  });
  const timer = setTimeout(() => {
    broken = new Error(`serve: a client got ${count} of ${to - from} events in ${timeoutMs} ms`);
    stream.close();
  }, timeoutMs);
  try {
    await stream.done;
  } finally {
    clearTimeout(timer);
  }
  if (broken !== undefined) throw broken;
  return count;
}

/** Follows /v1/events from the first: each task's final state, the pilots' states. */
class Follower {
  lastId = 0;
  pilotActive = false;
  private lastAt = nowNs();
  private readonly final = new Map<string, string>();
  private readonly waiters = new Set<() => void>();
  private readonly stream: { done: Promise<void>; close(): void };
  private failed: Error | undefined;

  constructor(svc: Service) {
    this.stream = openEvents(svc, 0, (blocks) => {
      for (const b of blocks) this.onBlock(b);
      this.lastAt = nowNs();
      for (const w of [...this.waiters]) w();
      return false;
    });
    this.stream.done.then(
      () => this.fail(new Error('serve: the event stream ended')),
      (e: unknown) => this.fail(e instanceof Error ? e : new Error(String(e))),
    );
  }

  private onBlock(block: string): void {
    const id = idOf(block);
    if (id === undefined) return;
    if (id !== this.lastId + 1) this.fail(new Error(`serve: event ${id} after ${this.lastId}`));
    this.lastId = id;
    const data = block.slice(block.indexOf('\ndata: ') + 7);
    if (block.includes('\nevent: task\n')) {
      // most are not final: only those are parsed (this process shares the cores with the
      // service, and a JSON.parse of every event would be load the figures carry)
      if (!FINAL_STATE.test(data)) return;
      const n = JSON.parse(data) as { uid: string; state: string };
      if (FINAL.has(n.state)) this.final.set(n.uid, n.state);
    } else if (block.includes('\nevent: pilot\n')) {
      const n = JSON.parse(data) as { state: string };
      if (n.state === 'PMGR_ACTIVE') this.pilotActive = true;
    }
  }

  private fail(e: Error): void {
    this.failed ??= e;
    for (const w of [...this.waiters]) w();
  }

  /** Resolves once `ready()` holds (checked at each event); rejects after `timeoutMs`. */
  until(ready: () => boolean, timeoutMs: number, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (this.failed !== undefined) reject(this.failed);
        else if (ready()) resolve();
        else return;
        this.waiters.delete(check);
        clearTimeout(timer);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`serve: no ${what} on /v1/events in ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  /** Waits for the final state of every one of `uids`; resolves with them. */
  async finals(uids: readonly string[], timeoutMs: number): Promise<Map<string, string>> {
    let i = 0; // uids before i are final: each is looked at until it is, once after
    await this.until(
      () => {
        while (i < uids.length && this.final.has(uids[i]!)) i++;
        return i === uids.length;
      },
      timeoutMs,
      `final state of ${uids.length} tasks`,
    );
    return new Map(uids.map((u) => [u, this.final.get(u)!]));
  }

  /** Resolves once no event came for `ms`. */
  async quiet(ms: number): Promise<void> {
    for (;;) {
      const idle = secondsBetween(this.lastAt, nowNs()) * 1000;
      if (idle >= ms) return;
      await new Promise((r) => setTimeout(r, ms - idle));
    }
  }

  close(): void {
    this.stream.close();
  }
}
