import * as fs from 'node:fs';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../../src/generated';
import { deferred, withTimeout } from '../../../../src/lib/deferred';
import { Bridge } from '../../../../src/transport/bridge';
import { QueueSender } from '../../../../src/transport/queue';
import {
  EmbeddedStore,
  StoreServer,
  UpdateWorker,
  type StoreUnwritableError,
} from '../../../../src/updater';
import { Tmpfs, tmpfsUnavailable } from '../../../support/tmpfs';
import { makeNotes, RecordingLogger, waitForCount } from '../helpers';

const title =
  tmpfsUnavailable === undefined
    ? 'EmbeddedStore on a full disk (a real tmpfs)'
    : `EmbeddedStore on a full disk (skipped: ${tmpfsUnavailable})`;
const d = tmpfsUnavailable === undefined ? describe : describe.skip;

/** Every change of the store's condition, and a way to wait for the next one. */
function conditions(store: EmbeddedStore): {
  seen: (StoreUnwritableError | undefined)[];
  next(ms?: number): Promise<StoreUnwritableError | undefined>;
} {
  const seen: (StoreUnwritableError | undefined)[] = [];
  let waiting = deferred<StoreUnwritableError | undefined>();
  store.onUnwritable((e) => {
    seen.push(e);
    const w = waiting;
    waiting = deferred();
    w.resolve(e);
  });
  return { seen, next: (ms = 10_000) => withTimeout(waiting.promise, ms, 'store condition') };
}

/** Whether `p` has settled, seen after everything already queued has run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

d(title, () => {
  const mounts: Tmpfs[] = [];
  const stores: EmbeddedStore[] = [];

  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    for (const m of mounts.splice(0)) m.unmount();
  });

  const open = async (opts: Parameters<typeof EmbeddedStore.open>[1] = {}) => {
    const fsys = Tmpfs.mount('512k');
    mounts.push(fsys);
    const store = await EmbeddedStore.open(`${fsys.dir}/store`, {
      retryMs: { first: 10, max: 50 },
      ...opts,
    });
    stores.push(store);
    return { fsys, store };
  };

  it('holds appends while the disk is full, says so, and writes them in order once space is back', async () => {
    const { fsys, store } = await open();
    const cond = conditions(store);
    await expect(store.append(makeNotes(10, 'before'))).resolves.toBe(10);
    const sizeBefore = fs.statSync(store.file).size;
    fsys.fill();
    // more than the slack the last page of store.log has left
    const a = makeNotes(300, 'a');
    const b = makeNotes(300, 'b');
    const pa = store.append(a);
    const pb = store.append(b);
    const err = await cond.next();
    expect(err).toMatchObject({
      code: 'E_STORE_UNWRITABLE',
      errno: 'ENOSPC',
      path: store.file,
    });
    expect(err!.held).toBeGreaterThanOrEqual(300);
    expect(err!.message).toContain(`cannot write ${store.file}: ENOSPC`);
    expect(store.unwritable?.errno).toBe('ENOSPC');
    expect(await settled(pa)).toBe(false);
    // a torn record is never left in the file
    expect(fs.statSync(store.file).size).toBe(sizeBefore);

    fsys.free();
    await expect(cond.next()).resolves.toBeUndefined();
    await expect(Promise.all([pa, pb])).resolves.toEqual([300, 300]);
    expect(store.unwritable).toBeUndefined();
    const held = await store.history();
    expect(held.map((n) => n.uid)).toEqual(
      [...makeNotes(10, 'before'), ...a, ...b].map((n: Notification) => n.uid),
    );
    expect(cond.seen.map((e) => e?.code)).toEqual(['E_STORE_UNWRITABLE', undefined]);

    // the file reads back whole
    await store.close();
    const again = await EmbeddedStore.open(`${fsys.dir}/store`);
    stores.push(again);
    expect(again.recovery).toMatchObject({ tail: 'clean', truncatedBytes: 0, records: 3 });
    expect(again.size).toBe(610);
  });

  it('accepts a batch once even when it comes again while held', async () => {
    const { fsys, store } = await open();
    const cond = conditions(store);
    fsys.fill();
    const notes = makeNotes(200, 'dup');
    const first = store.append(notes);
    await cond.next();
    const again = store.append(notes);
    fsys.free();
    await expect(Promise.all([first, again])).resolves.toEqual([200, 0]);
    expect(store.size).toBe(200);
  });

  it('refuses appends at once beyond maxHeld while it cannot write', async () => {
    const { fsys, store } = await open({ maxHeld: 250 });
    const cond = conditions(store);
    fsys.fill();
    const held = store.append(makeNotes(200, 'held'));
    await cond.next();
    await expect(store.append(makeNotes(100, 'refused'))).rejects.toMatchObject({
      code: 'E_STORE_UNWRITABLE',
      errno: 'ENOSPC',
      held: 200,
    });
    fsys.free();
    await expect(held).resolves.toBe(200);
  });

  it('closes when space never comes back: what it held is given up and counted, the file stays readable', async () => {
    const { fsys, store } = await open();
    const cond = conditions(store);
    await store.append(makeNotes(20, 'kept'));
    fsys.fill();
    const lostA = store.append(makeNotes(300, 'lost'));
    const lostB = store.append(makeNotes(300, 'lost')); // the same keys: counted once
    await cond.next();
    await withTimeout(store.close(), 5_000, 'close of a store that cannot write');
    await expect(lostA).rejects.toMatchObject({ code: 'E_STORE_UNWRITABLE', lost: 300 });
    await expect(lostB).rejects.toMatchObject({ code: 'E_STORE_UNWRITABLE' });
    expect(store.lost).toBe(300);
    fsys.free();
    const again = await EmbeddedStore.open(`${fsys.dir}/store`);
    stores.push(again);
    expect(again.recovery).toMatchObject({ tail: 'clean', truncatedBytes: 0 });
    expect(again.size).toBe(20);
  });

  it('rolls to a new segment while the disk is full, losing and tearing nothing', async () => {
    const { fsys, store } = await open({ segmentBytes: 16_384 });
    const cond = conditions(store);
    await store.append(makeNotes(100, 'first'));
    fsys.fill();
    const held = store.append(makeNotes(400, 'second'));
    await cond.next();
    fsys.free();
    await expect(held).resolves.toBe(400);
    await store.close();
    const again = await EmbeddedStore.open(`${fsys.dir}/store`, { segmentBytes: 16_384 });
    stores.push(again);
    expect(again.recovery).toMatchObject({ tail: 'clean', truncatedBytes: 0 });
    expect(again.size).toBe(500);
  });

  it('keeps what UpdateWorkers send while it cannot write, and acks each batch once space is back', async () => {
    const { fsys, store } = await open();
    const cond = conditions(store);
    const log = new RecordingLogger();
    const bridge = await Bridge.queue();
    const server = await StoreServer.start(store, { session: 's', logger: log });
    const sender = new QueueSender(bridge.endpoints.in);
    // acks are late while the disk is full: batches are sent again, and must be held once
    const workers = [0, 1].map((i) =>
      UpdateWorker.start({
        updatesAddress: bridge.endpoints.out,
        storeAddress: server.endpoint,
        session: 's',
        logger: log,
        name: `uw${i}`,
        batchSize: 50,
        ackTimeoutMs: 100,
      }),
    );
    try {
      fsys.fill();
      const notes = makeNotes(1_000, 'worker');
      for (let i = 0; i < notes.length; i += 100) await sender.send(notes.slice(i, i + 100));
      await cond.next();
      await log.waitFor(
        (es) =>
          es.filter((e) => e.message === 'store ack timed out, re-sending batch').length >= 32,
        10_000,
        'batches sent again (twice) while held',
      );
      // each worker has at most 8 batches of 50 out: a batch sent again is not held twice
      expect(store.unwritable!.held).toBeLessThanOrEqual(2 * 8 * 50);
      fsys.free();
      await waitForCount(store, 1_000, 15_000);
      expect(cond.seen.map((e) => e?.errno)).toEqual(['ENOSPC', undefined]);
      const all = await store.history();
      expect(new Set(all.map((n) => `${n.uid}/${n.state}`)).size).toBe(1_000);
      expect(all).toHaveLength(1_000);
    } finally {
      await sender.close();
      await Promise.all(workers.map((w) => w.close()));
      // a store still unable to write (a failed test) ends what it holds as it closes
      await Promise.all([server.close(), store.close()]);
      await bridge.close();
    }
    const stats = workers.map((w) => w.stats());
    expect(stats.reduce((n, s) => n + s.acked, 0)).toBe(1_000);
    expect(stats.every((s) => s.inFlight === 0)).toBe(true);
  }, 40_000);
});
