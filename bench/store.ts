/**
 * The embedded state store (docs/state-store.md) under load.
 *
 * - `notifications_per_s`: N notifications (agent-shaped: a task uid, attempt 1, one of six
 *   states) go in bulks of 256 `QueueSender` → `Bridge.queue()` → 2 `UpdateWorker`s →
 *   `StoreServer` → `EmbeddedStore` (fsync'd group commits), all in this process on loopback
 *   tcp; the clock runs from the first push to the store holding all N.
 * - `open_10m_ms`: `EmbeddedStore.open` of a session holding 10 million notifications (20,000
 *   in quick mode), built through `EmbeddedStore.append` (not through workers, which would take
 *   minutes) in appends of 1,024 notifications, the size of a worker's batch, so one record
 *   each, in segments sealed with their summaries as a live session's are. `file_mb`
 *   gives the segments' total size, `segments` their number.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Notification } from '../src/generated';
import { silentLogger } from '../src/lib/logger';
import { Bridge } from '../src/transport/bridge';
import { QueueSender } from '../src/transport/queue';
import { EmbeddedStore, StoreServer, UpdateWorker } from '../src/updater';
import { nowNs, secondsBetween, sig, type BenchOptions } from './harness';

export const name = 'store';
export const description =
  'notifications/s through 2 UpdateWorkers into the embedded store, and the time to open a ' +
  '10-million-notification session file';

const STATES = [
  'TMGR_SCHEDULING_PENDING',
  'TMGR_SCHEDULING',
  'AGENT_STAGING_INPUT_PENDING',
  'AGENT_SCHEDULING',
  'AGENT_EXECUTING',
  'DONE',
] as const;

/** Notification i of a session: tasks cycle through the states, six notifications per task. */
function note(i: number): Notification {
  return {
    kind: 'task',
    uid: `task.${String(Math.floor(i / STATES.length)).padStart(7, '0')}`,
    attempt: 1,
    state: STATES[i % STATES.length]!,
    ts: 1_790_000_000_000 + i,
    component: 'agent.executor',
  };
}

export async function run({ quick, emit }: BenchOptions): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-bench-store-'));
  try {
    const n = quick ? 5_000 : 1_000_000;
    const bulk = 256;
    const seconds = await throughput(path.join(tmp, 'push'), n, bulk);
    emit({
      metric: 'notifications_per_s',
      value: sig(n / seconds),
      unit: '1/s',
      notifications: n,
      bulk,
      workers: 2,
      seconds: sig(seconds),
    });

    const m = quick ? 20_000 : 10_000_000;
    const dir = path.join(tmp, 'open');
    const files = await writeSession(dir, m, 1_024);
    const start = nowNs();
    const store = await EmbeddedStore.open(dir);
    const ms = secondsBetween(start, nowNs()) * 1e3;
    if (store.size !== m) throw new Error(`opened ${store.size} of ${m} notifications`);
    const memory = process.memoryUsage();
    await store.close();
    emit({
      metric: 'open_10m_ms',
      value: sig(ms),
      unit: 'ms',
      notifications: m,
      file_mb: sig(files.bytes / 2 ** 20),
      segments: files.segments,
      heap_mb_after_open: sig(memory.heapUsed / 2 ** 20),
      // Typed arrays (the uid index), file buffers and long strings live off the JS heap.
      external_mb_after_open: sig(memory.external / 2 ** 20),
      rss_mb_after_open: sig(memory.rss / 2 ** 20),
    });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function throughput(dir: string, n: number, bulk: number): Promise<number> {
  const logger = silentLogger;
  const bridge = await Bridge.queue();
  const store = await EmbeddedStore.open(dir);
  const server = await StoreServer.start(store, { session: 'bench', logger });
  const workers = [0, 1].map((i) =>
    UpdateWorker.start({
      updatesAddress: bridge.endpoints.out,
      storeAddress: server.endpoint,
      session: 'bench',
      logger,
      name: `bench${i}`,
    }),
  );
  const sender = new QueueSender(bridge.endpoints.in);
  const bulks: Notification[][] = [];
  for (let i = 0; i < n; i += bulk) {
    bulks.push(Array.from({ length: Math.min(bulk, n - i) }, (_, j) => note(i + j)));
  }
  try {
    const start = nowNs();
    const full = waitFor(store, n);
    for (const b of bulks) await sender.send(b);
    await full;
    return secondsBetween(start, nowNs());
  } finally {
    await sender.close();
    await Promise.all(workers.map((w) => w.close()));
    await server.close();
    await store.close();
    await bridge.close();
  }
}

/** Resolves once the store holds n notifications (followed with a watch, as a client would). */
async function waitFor(store: EmbeddedStore, n: number): Promise<void> {
  const it = store.watch(0);
  try {
    for (;;) {
      const r = await it.next();
      if (r.done === true) throw new Error(`store closed before holding ${n}`);
      if (r.value.cursor + r.value.notifications.length >= n) return;
    }
  } finally {
    await it.return?.();
  }
}

/**
 * Builds a session of m notifications through the store's own append path, one append (so one
 * record, one fsync) per `per` notifications, so it gets sealed segments and their summaries as
 * a live session would; returns the size of its segment files.
 */
async function writeSession(dir: string, m: number, per: number): Promise<SessionFiles> {
  const store = await EmbeddedStore.open(dir);
  try {
    for (let i = 0; i < m; i += per) {
      const batch: Notification[] = [];
      for (let j = i; j < Math.min(i + per, m); j++) batch.push(note(j));
      await store.append(batch);
    }
  } finally {
    await store.close();
  }
  let bytes = 0;
  let segments = 0;
  for (const name of fs.readdirSync(dir)) {
    if (!/^store(\.[0-9]+)?\.log$/.test(name)) continue;
    bytes += fs.statSync(path.join(dir, name)).size;
    segments++;
  }
  return { bytes, segments };
}

interface SessionFiles {
  bytes: number;
  segments: number;
}
