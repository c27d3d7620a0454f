import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zmq from 'zeromq';
import type { Notification, StoreRequest } from '../../../src/generated';
import { withTimeout } from '../../../src/lib/deferred';
import { notificationKey } from '../../../src/states/notification';
import { Bridge } from '../../../src/transport/bridge';
import { decode, encode } from '../../../src/transport/codec';
import { QueueSender } from '../../../src/transport/queue';
import { EmbeddedStore, StoreServer } from '../../../src/updater';
import { UpdateWorker, type UpdateWorkerOptions } from '../../../src/updater';
import type { StateStore } from '../../../src/updater/state-store';
import {
  makeNotes,
  ObservedStore,
  RecordingLogger,
  UpdatePath,
  waitForCount,
  type LogEntry,
} from './helpers';

const bulksOf = (notes: Notification[], size: number): Notification[][] =>
  Array.from({ length: Math.ceil(notes.length / size) }, (_, i) =>
    notes.slice(i * size, (i + 1) * size),
  );

describe('UpdateWorker', () => {
  let bridge: Bridge;
  let store: EmbeddedStore;
  let observed: ObservedStore;
  let server: StoreServer;
  let sender: QueueSender;
  let log: RecordingLogger;
  let workers: UpdateWorker[];

  let updates: UpdatePath;

  beforeEach(async () => {
    log = new RecordingLogger();
    updates = await UpdatePath.open('pf-updater-', log, (s) => (observed = new ObservedStore(s)));
    ({ bridge, store, server, sender, workers } = updates);
  });

  afterEach(() => updates.close());

  const startWorkers = (n: number, opts: Partial<UpdateWorkerOptions> = {}): UpdateWorker[] =>
    updates.start(n, opts);
  const sum = (pick: (s: ReturnType<UpdateWorker['stats']>) => number): number =>
    workers.reduce((total, w) => total + pick(w.stats()), 0);

  it('stores 20,000 notifications from two competing workers exactly once, and again none', async () => {
    startWorkers(2);
    const notes = makeNotes(20_000);
    const started = process.hrtime.bigint();
    await Promise.all(bulksOf(notes, 100).map((b) => sender.send(b)));
    await waitForCount(store, notes.length, 20_000);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (process.env.PILOTFISH_REPORT_RATE !== undefined) {
      process.stdout.write(
        `updater: ${notes.length} notifications in ${seconds.toFixed(3)} s = ${Math.round(notes.length / seconds)}/s\n`,
      );
    }
    const keys = (await store.history()).map(notificationKey);
    expect(keys.length).toBe(notes.length);
    expect(new Set(keys)).toEqual(new Set(notes.map(notificationKey)));

    // The same notifications again: wait until every one has been through a completed append.
    const before = observed.appended.length;
    const again = new Set<string>();
    let scanned = before;
    const allSeenAgain = (): boolean => {
      for (; scanned < observed.appended.length; scanned++) {
        for (const n of observed.appended[scanned]!.batch) again.add(notificationKey(n));
      }
      return again.size === notes.length;
    };
    await Promise.all(bulksOf(notes, 100).map((b) => sender.send(b)));
    await observed.until(allSeenAgain, 20_000, 'second pass through the store');
    expect(observed.appended.slice(before).reduce((s, a) => s + a.accepted, 0)).toBe(0);
    expect(store.size).toBe(notes.length);
    expect(sum((s) => s.received)).toBe(2 * notes.length);
  });

  it('holds a bounded number while the store is away, then delivers every notification exactly once', async () => {
    // the store goes away (its client died) and comes back at the same address
    await server.close();
    startWorkers(2, { batchSize: 100, maxInFlight: 4, ackTimeoutMs: 300 });
    const notes = makeNotes(20_000);
    const pushing = (async () => {
      for (const bulk of bulksOf(notes, 50)) await sender.send(bulk);
    })();
    // each worker pulls until maxInFlight batches wait for acks, then leaves the rest queued
    await withTimeout(
      (async () => {
        while (sum((s) => s.inFlight) < 8) await new Promise((r) => setImmediate(r));
      })(),
      10_000,
      'workers holding maxInFlight batches',
    );
    const bound = 2 * (4 * 100 + 100 + 50); // in flight, plus a partial batch, plus one bulk
    expect(sum((s) => s.received)).toBeLessThanOrEqual(bound);
    server = await updates.restartServer();
    expect(await waitForCount(store, notes.length, 30_000)).toBe(notes.length);
    await pushing;
    const keys = new Set((await store.history()).map(notificationKey));
    expect(keys.size).toBe(notes.length);
  }, 40_000);

  it('logs and counts invalid messages without stopping, and valid traffic still arrives', async () => {
    startWorkers(2);
    expect(() => decode(Buffer.from('not msgpack'))).toThrow();
    const raw = new zmq.Push({ linger: 1_000 });
    raw.connect(bridge.endpoints.in);
    try {
      const [first, ...rest] = bulksOf(makeNotes(60), 6);
      for (const frame of [
        Buffer.from('not msgpack'),
        encode([{ foo: 1 }]),
        encode([]),
        encode(first),
      ]) {
        await raw.send(frame);
      }
      for (const bulk of rest) await sender.send(bulk);
      await waitForCount(store, 60, 5_000);
      const rejected = (es: LogEntry[]): LogEntry[] =>
        es.filter(
          (e) =>
            e.message === 'invalid update message' || e.message === 'undecodable update message',
        );
      await log.waitFor((es) => rejected(es).length === 3, 5_000, 'three rejected messages logged');
      expect(sum((s) => s.invalid)).toBe(3);
      const issues = rejected(log.entries).flatMap(
        (e) => (e.meta.issues as unknown[] | undefined) ?? [],
      );
      expect(issues).toContainEqual({ path: '/0', message: "must have required property 'kind'" });
      expect(issues).toContainEqual({ path: '/', message: 'must NOT have fewer than 1 items' });
      // Both workers keep pulling after the bad messages.
      await sender.send(makeNotes(5, 'later'));
      await waitForCount(store, 65, 5_000);
    } finally {
      raw.close();
    }
  });

  it('sends a partial batch on close and waits for its ack', async () => {
    const [worker] = startWorkers(1, { batchMs: 60_000, batchSize: 1024 });
    const notes = makeNotes(10);
    for (const bulk of bulksOf(notes, 3)) await sender.send(bulk);
    const received = (es: LogEntry[]): number =>
      es
        .filter((e) => e.message === 'update bulk received')
        .reduce((s, e) => s + (e.meta.count as number), 0);
    await log.waitFor((es) => received(es) === 10, 5_000, 'ten notifications received');
    expect(store.size).toBe(0); // still buffered: batchMs is a minute away
    await worker!.close();
    expect(store.size).toBe(10);
    expect(worker!.stats()).toMatchObject({ received: 10, acked: 10, inFlight: 0 });
    expect(new Set((await store.history()).map(notificationKey))).toEqual(
      new Set(notes.map(notificationKey)),
    );
  });
});

describe("UpdateWorker taking its own process's notifications", () => {
  let dir: string;
  let store: EmbeddedStore;
  const started: UpdateWorker[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'pf-uw-local-'));
    store = await EmbeddedStore.open(dir);
  });

  afterEach(async () => {
    for (const w of started.splice(0)) await w.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = (opts: Partial<UpdateWorkerOptions>): UpdateWorker => {
    const w = UpdateWorker.start({ session: 's', logger: new RecordingLogger(), ...opts });
    started.push(w);
    return w;
  };

  it('appends what it is handed to the store of its process, each once, in batches', async () => {
    const w = start({ store, batchSize: 500 });
    const notes = makeNotes(5_000);
    for (const bulk of bulksOf(notes, 64)) w.take(bulk);
    w.take(notes.slice(0, 100)); // handed twice: stored once
    await waitForCount(store, notes.length, 20_000);
    await w.close();
    expect(w.stats()).toMatchObject({ received: 5_100, acked: 5_100, invalid: 0, inFlight: 0 });
    expect(new Set((await store.history()).map(notificationKey))).toEqual(
      new Set(notes.map(notificationKey)),
    );
  });

  it('with gapMs, sends the first batch at once and what keeps coming within the gap as one', async () => {
    const batches: number[] = [];
    const counting = {
      append: (b: Notification[]) => {
        batches.push(b.length);
        return store.append(b);
      },
    } as unknown as StateStore;
    const w = start({ store: counting, gapMs: 300 });
    const notes = makeNotes(40);
    w.take(notes.slice(0, 10));
    expect(batches).toEqual([10]);
    for (let i = 10; i < 40; i += 10) w.take(notes.slice(i, i + 10));
    await waitForCount(store, 40, 10_000);
    expect(batches).toEqual([10, 30]);
    await w.close();
  });

  it('appends through a StoreServer too, and tells who waits for it that it took them', async () => {
    const server = await StoreServer.start(store, { session: 's', logger: new RecordingLogger() });
    try {
      const w = start({ storeAddress: server.endpoint });
      let heard = 0;
      w.onPulled(() => heard++);
      w.take(makeNotes(10));
      expect([w.stats().received, heard]).toEqual([10, 1]);
      await waitForCount(store, 10, 10_000);
      await w.close();
      expect(w.stats()).toMatchObject({ acked: 10, inFlight: 0 });
    } finally {
      await server.close();
    }
  });

  it('refuses to start without a store to reach', () => {
    expect(() => start({})).toThrow('needs a storeAddress or a store');
  });
});

describe('UpdateWorker against a raw store socket', () => {
  let bridge: Bridge;
  let router: zmq.Router;
  let sender: QueueSender;
  let worker: UpdateWorker | undefined;

  beforeEach(async () => {
    bridge = await Bridge.queue();
    router = new zmq.Router({ linger: 0 });
    await router.bind('tcp://127.0.0.1:0');
    sender = new QueueSender(bridge.endpoints.in);
  });

  afterEach(async () => {
    await sender.close();
    await worker?.close();
    worker = undefined;
    router.close();
    await bridge.close();
  });

  const start = (opts: Partial<UpdateWorkerOptions>): UpdateWorker =>
    (worker = UpdateWorker.start({
      updatesAddress: bridge.endpoints.out,
      storeAddress: router.lastEndpoint!,
      session: 's',
      logger: new RecordingLogger(),
      ...opts,
    }));
  const nextRequest = async (): Promise<{ peer: Buffer; frame: Buffer; request: StoreRequest }> => {
    const [peer, frame] = await withTimeout(router.receive(), 5_000, 'store request');
    return { peer: peer!, frame: frame!, request: decode(frame!) as StoreRequest };
  };
  const ack = (peer: Buffer, request: StoreRequest): Promise<void> =>
    router.send([
      peer,
      encode({ batch: request.batch, ok: true, accepted: request.notifications.length }),
    ]);

  it('re-sends the same batch after the ack timeout, and counts it acked once', async () => {
    const w = start({ ackTimeoutMs: 200, batchMs: 1 });
    await sender.send(makeNotes(5));
    const first = await nextRequest(); // lost: no reply
    const again = await nextRequest();
    expect(again.frame.equals(first.frame)).toBe(true);
    await ack(again.peer, again.request);
    await w.close();
    expect(w.stats()).toMatchObject({ received: 5, acked: 5, inFlight: 0, resent: 1 });
  });

  it('stops pulling while maxInFlight batches are unacknowledged', async () => {
    const w = start({ maxInFlight: 2, batchSize: 1 });
    const notes = makeNotes(6);
    for (const n of notes) await sender.send([n]);
    const held: { peer: Buffer; request: StoreRequest }[] = [];
    for (let k = 1; k <= notes.length; k++) {
      held.push(await nextRequest());
      if (k < 2) continue;
      // Batch k made two unacked: the worker pulls nothing more until the oldest is acked.
      expect(w.stats()).toMatchObject({ received: k, inFlight: 2 });
      const oldest = held.shift()!;
      await ack(oldest.peer, oldest.request);
    }
    for (const h of held) await ack(h.peer, h.request);
    await w.close();
    expect(w.stats()).toMatchObject({ received: 6, acked: 6, inFlight: 0 });
  });

  it("keeps at most maxInFlight batches in flight from its own process's notifications too", async () => {
    // handed over with take() (an agent's, the client's): nothing to stop pulling, so the
    // bound is on what it sends; the rest waits in its buffer until acks make room
    const w = (worker = UpdateWorker.start({
      storeAddress: router.lastEndpoint!,
      session: 's',
      logger: new RecordingLogger(),
      maxInFlight: 2,
      batchSize: 5,
      batchMs: 1,
      ackTimeoutMs: 300,
    }));
    const notes = makeNotes(40);
    for (let i = 0; i < notes.length; i += 5) w.take(notes.slice(i, i + 5));
    // a store that does not answer: what comes is the two batches, then their re-sends
    const seen: { peer: Buffer; request: StoreRequest }[] = [];
    while (
      seen.filter((r, i) => seen.findIndex((o) => o.request.batch === r.request.batch) < i).length <
      4
    ) {
      seen.push(await nextRequest());
    }
    expect(new Set(seen.map((r) => r.request.batch)).size).toBe(2);
    expect(w.stats()).toMatchObject({ received: 40, inFlight: 2 });
    // the store answers: every batch goes, each acked once
    const acked = new Set<string>();
    for (const r of seen) {
      if (acked.has(r.request.batch)) continue;
      acked.add(r.request.batch);
      await ack(r.peer, r.request);
    }
    while (acked.size < notes.length / 5) {
      const r = await nextRequest();
      if (acked.has(r.request.batch)) continue;
      acked.add(r.request.batch);
      expect(w.stats().inFlight).toBeLessThanOrEqual(2);
      await ack(r.peer, r.request);
    }
    // close waits for the last acks
    expect(acked.size).toBe(8);
    await w.close();
    expect(w.stats()).toMatchObject({ received: 40, acked: 40, inFlight: 0 });
  });
});
