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
import { EmbeddedStore, StoreServer, UpdateWorker } from '../../../src/updater';
import { prng, waitForCount } from './helpers';

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

describe('notifications through competing UpdateWorkers, rebuilt by the StateTracker', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it.each([1, 3, 8])(
    'give each task exactly its model-ordered history with %i worker(s), shuffled, with duplicates',
    async (nWorkers) => {
      const rnd = prng(0xc0ffee + nWorkers);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-rebuild-'));
      closers.push(() => fs.rmSync(dir, { recursive: true, force: true }));
      const store = await EmbeddedStore.open(dir);
      closers.push(() => store.close());
      const server = await StoreServer.start(store, { session: 's', logger: silentLogger });
      closers.push(() => server.close());
      const bridge = await Bridge.queue();
      closers.push(() => bridge.close());
      for (let i = 0; i < nWorkers; i++) {
        const w = UpdateWorker.start({
          updatesAddress: bridge.endpoints.out,
          storeAddress: server.endpoint,
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
      await waitForCount(store, unique.length, 20_000);

      const tracker = new StateTracker(TASK_MODEL, TASK_RETRY_STATE);
      const seen = new Map<string, { state: string; attempt: number }[]>();
      for (const n of await store.history()) {
        for (const e of tracker.ingest(n)) {
          seen.set(e.uid, [...(seen.get(e.uid) ?? []), { state: e.state, attempt: e.attempt }]);
        }
      }
      expect(await store.history()).toHaveLength(unique.length);
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
        const keys = got.map((e) => `${e.attempt}:${e.state}`);
        expect(new Set(keys).size).toBe(keys.length);
      }
    },
    40_000,
  );
});
