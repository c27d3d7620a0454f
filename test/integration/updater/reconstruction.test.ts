import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../src/generated';
import { silentLogger } from '../../../src/lib/logger';
import { StateTracker } from '../../../src/states/state-tracker';
import {
  TASK_MODEL,
  TASK_RETRY_STATE,
  TASK_STATES,
  type TaskState,
} from '../../../src/states/task-model';
import { Bridge } from '../../../src/transport/bridge';
import { QueueSender } from '../../../src/transport/queue';
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { EmbeddedStore, StoreServer, UpdateWorker, type StateStore } from '../../../src/updater';
import { MongoStore } from '../../../src/updater/mongodb/store';
import { withTimeout } from '../../../src/lib/deferred';
import { prng } from './helpers';

const LINE = TASK_STATES.slice(0, TASK_STATES.indexOf('DONE'));
type Path = { uid: string; attempts: TaskState[][] };

/** A random task life: optionally a retried first attempt, then a path to a final state. */
function randomPath(uid: string, rnd: () => number): Path {
  const attempts: TaskState[][] = [];
  if (rnd() < 0.2) attempts.push(LINE.slice(0, 1 + Math.floor(rnd() * LINE.length)));
  const start = attempts.length > 0 ? LINE.indexOf(TASK_RETRY_STATE) : 0;
  const r = rnd();
  const end = r < 0.6 ? LINE.length : start + 1 + Math.floor(rnd() * (LINE.length - start - 1));
  const last = LINE.slice(start, end);
  last.push(r < 0.6 ? 'DONE' : r < 0.8 ? 'FAILED' : 'CANCELED');
  attempts.push(last);
  return { uid, attempts };
}

function notificationsOf(p: Path): Notification[] {
  return p.attempts.flatMap((states, i) =>
    states.map((state, k) => ({
      kind: 'task' as const,
      uid: p.uid,
      attempt: i + 1,
      state,
      ts: 1_700_000_000_000 + i * 1000 + k,
      component: 'test',
    })),
  );
}

/** Where the workers write: each worker's own link to the store, and the store read back. */
interface Backend {
  /** The store the test reads back (a watch, as a client follows it). */
  reader: StateStore;
  /** What one worker writes through: its own connection, as each agent has. */
  link(): Promise<{ storeAddress: string } | { store: StateStore }>;
}

type Closers = (() => Promise<void> | void)[];

async function embedded(closers: Closers): Promise<Backend> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-rebuild-'));
  closers.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = await EmbeddedStore.open(dir);
  closers.push(() => store.close());
  const server = await StoreServer.start(store, { session: 's', logger: silentLogger });
  closers.push(() => server.close());
  return { reader: store, link: () => Promise.resolve({ storeAddress: server.endpoint }) };
}

const MONGO_URI = process.env['PILOTFISH_MONGODB_URI'];
const MONGO_DB = 'pilotfish_test';

/** Each worker gets a MongoStore (a client, a connection pool) of its own, as agents do. */
async function mongodb(closers: Closers, session: string): Promise<Backend> {
  const uri = MONGO_URI!;
  closers.push(async () => {
    const client = new MongoClient(uri);
    try {
      await client.db(MONGO_DB).collection('notifications').deleteMany({ session });
      await client.db(MONGO_DB).collection<{ _id: string }>('counters').deleteOne({ _id: session });
    } finally {
      await client.close();
    }
  });
  const open = async (): Promise<MongoStore> => {
    const store = await MongoStore.open(uri, session, { db: MONGO_DB, pollMs: 20 });
    closers.push(() => store.close());
    return store;
  };
  const reader = await open();
  return { reader, link: async () => ({ store: await open() }) };
}

/** Follows `store` from 0 until `n` notifications came; returns them in delivery order. */
async function follow(store: StateStore, n: number, ms: number): Promise<Notification[]> {
  const out: Notification[] = [];
  const it = store.watch(0)[Symbol.asyncIterator]();
  const read = async (): Promise<void> => {
    while (out.length < n) {
      const r = await it.next();
      if (r.done === true) throw new Error(`watch ended at ${out.length} of ${n}`);
      expect(r.value.cursor).toBe(out.length);
      out.push(...r.value.notifications);
    }
  };
  try {
    await withTimeout(read(), ms, `${n} notifications from the store`);
  } finally {
    await it.return?.();
  }
  return out;
}

function rebuildProperty(open: (closers: Closers) => Promise<Backend>): void {
  const closers: Closers = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it.each([1, 3, 8])(
    'give each task exactly its model-ordered history with %i worker(s), shuffled, with duplicates',
    async (nWorkers) => {
      const rnd = prng(0xc0ffee + nWorkers);
      const backend = await open(closers);
      const bridge = await Bridge.queue();
      closers.push(() => bridge.close());
      for (let i = 0; i < nWorkers; i++) {
        const w = UpdateWorker.start({
          updatesAddress: bridge.endpoints.out,
          ...(await backend.link()),
          session: 's',
          batchSize: 1 + Math.floor(rnd() * 64),
          batchMs: 1 + Math.floor(rnd() * 10),
          logger: silentLogger,
        });
        closers.push(() => w.close());
      }
      const paths = Array.from({ length: 300 }, (_, i) => randomPath(`t${i}`, rnd));
      const unique = paths.flatMap(notificationsOf);
      // every notification once, a tenth of them again, all in a random order
      const all = [...unique, ...unique.filter(() => rnd() < 0.1)];
      for (let i = all.length - 1; i > 0; i--) {
        const j = Math.floor(rnd() * (i + 1));
        [all[i], all[j]] = [all[j]!, all[i]!];
      }
      const senders = [new QueueSender(bridge.endpoints.in), new QueueSender(bridge.endpoints.in)];
      closers.push(...senders.map((s) => () => s.close()));
      for (let i = 0; i < all.length;) {
        const n = 1 + Math.floor(rnd() * 50);
        await senders[i % 2]!.send(all.slice(i, i + n));
        i += n;
      }
      // read back as a client follows it: a watch, in store order
      const delivered = await follow(backend.reader, unique.length, 20_000);

      const tracker = new StateTracker(TASK_MODEL, TASK_RETRY_STATE);
      const seen = new Map<string, { state: string; attempt: number }[]>();
      for (const n of delivered) {
        for (const e of tracker.ingest(n)) {
          seen.set(e.uid, [...(seen.get(e.uid) ?? []), { state: e.state, attempt: e.attempt }]);
        }
      }
      // each notification once: duplicates were not stored twice, and none is missing
      expect(await backend.reader.history()).toHaveLength(unique.length);
      const keys = new Set(delivered.map((n) => `${n.uid}/${n.attempt}/${n.state}`));
      expect(keys.size).toBe(unique.length);
      for (const p of paths) {
        const got = seen.get(p.uid) ?? [];
        const last = p.attempts.length;
        const final = p.attempts[last - 1]!.at(-1)!;
        const lastAttempt = got.filter((e) => e.attempt === last).map((e) => e.state);
        // the final attempt: every state of its path in model order (FAILED/CANCELED end it
        // wherever they arrive, so they may cut it short), ending in its final state
        if (final === 'DONE') expect(lastAttempt).toEqual(p.attempts[last - 1]);
        else {
          expect(p.attempts[last - 1]!.slice(0, lastAttempt.length - 1)).toEqual(
            lastAttempt.slice(0, -1),
          );
        }
        expect(lastAttempt.at(-1)).toBe(final);
        // attempts ascend, and states never repeat within one
        const attempts = got.map((e) => e.attempt);
        expect([...attempts].sort((a, b) => a - b)).toEqual(attempts);
        const stateKeys = got.map((e) => `${e.attempt}:${e.state}`);
        expect(new Set(stateKeys).size).toBe(stateKeys.length);
      }
    },
    40_000,
  );
}

describe('notifications through competing UpdateWorkers, rebuilt by the StateTracker', () => {
  describe('embedded store', () => rebuildProperty(embedded));

  const withMongo = MONGO_URI !== undefined && MONGO_URI !== '';
  (withMongo ? describe : describe.skip)(
    withMongo
      ? 'MongoDB store (PILOTFISH_MONGODB_URI), a connection per worker'
      : 'MongoDB store (skipped: PILOTFISH_MONGODB_URI is not set; no MongoDB server can be installed here)',
    () => rebuildProperty((closers) => mongodb(closers, `rebuild-${randomUUID()}`)),
  );
});
