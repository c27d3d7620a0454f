import { afterEach, describe, expect, it } from '@jest/globals';
import * as zmq from 'zeromq';
import { encode } from '../../../src/transport/codec';
import { withTimeout } from '../../../src/lib/deferred';
import {
  BoundQueueReceiver,
  BoundQueueSender,
  MAX_MESSAGE_ITEMS,
  QueueReceiver,
  QueueSender,
} from '../../../src/transport/queue';

/** The next `n` decoded messages of a receiver. */
async function next(receiver: { messages: QueueReceiver['messages'] }, n: number) {
  const got: unknown[] = [];
  return withTimeout(
    (async () => {
      for await (const m of receiver.messages()) {
        if (!m.ok) throw m.error;
        got.push(m.value);
        if (got.length === n) break;
      }
      return got;
    })(),
    10_000,
    `${n} messages`,
  );
}

/** Whether `p` has settled (after pending callbacks ran). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('BoundQueueSender (a producer that binds, its one consumer connects)', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('holds what is sent before its consumer connects, then delivers it in order', async () => {
    const sender = await BoundQueueSender.listen('tcp://127.0.0.1:0');
    closers.push(() => sender.close());
    const items = Array.from({ length: 2 * MAX_MESSAGE_ITEMS + 7 }, (_, i) => ({ uid: `t.${i}` }));
    const sent = sender.send(items);
    const alone = sender.send(['after']);
    // no consumer yet: ZeroMQ's PUSH waits for one rather than dropping
    expect(await settled(sent)).toBe(false);
    const receiver = new QueueReceiver(sender.address);
    closers.push(() => receiver.close());
    const bulks = (await next(receiver, 4)) as unknown[][];
    await Promise.all([sent, alone]);
    expect(bulks.map((b) => b.length)).toEqual([MAX_MESSAGE_ITEMS, MAX_MESSAGE_ITEMS, 7, 1]);
    expect(bulks.slice(0, 3).flat()).toEqual(items);
    expect(bulks[3]).toEqual(['after']);
  });

  it('flushes on close what a live consumer has not taken yet', async () => {
    const sender = await BoundQueueSender.listen('tcp://127.0.0.1:0');
    const receiver = new QueueReceiver(sender.address);
    closers.push(() => receiver.close());
    await sender.send(['first']);
    expect(await next(receiver, 1)).toEqual([['first']]);
    const n = 50;
    for (let i = 0; i < n; i++) void sender.send([i]);
    await withTimeout(sender.close(), 10_000, 'close');
    const got = await next(receiver, n);
    expect(got).toEqual(Array.from({ length: n }, (_, i) => [i]));
  });

  it('closes without its consumer: sends that had none to go to are dropped, not failed', async () => {
    const sender = await BoundQueueSender.listen('tcp://127.0.0.1:0');
    const pending = [sender.send(['never taken']), sender.send(['nor this'])];
    await withTimeout(sender.close(), 10_000, 'close with no consumer');
    await expect(Promise.all(pending)).resolves.toEqual([undefined, undefined]);

    const other = await BoundQueueSender.listen('tcp://127.0.0.1:0');
    const dropped = other.send(['dropped']);
    await withTimeout(other.discard(), 1_000, 'discard');
    await expect(dropped).resolves.toBeUndefined();
  });

  // a resumed client binds the addresses its agents already know; their sockets reconnect
  it('reaches its consumer again once another socket binds the same address', async () => {
    const first = await BoundQueueSender.listen('tcp://127.0.0.1:0');
    const receiver = new QueueReceiver(first.address);
    closers.push(() => receiver.close());
    await first.send(['before']);
    expect(await next(receiver, 1)).toEqual([['before']]);
    await first.discard();
    const second = await BoundQueueSender.listen(first.address);
    closers.push(() => second.close());
    expect(second.address).toBe(first.address);
    await second.send(['after']);
    expect(await next(receiver, 1)).toEqual([['after']]);
  });
});

describe('BoundQueueReceiver (a consumer that binds, its one producer connects)', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('takes what its producer sends, long bulks split', async () => {
    const receiver = await BoundQueueReceiver.listen('tcp://127.0.0.1:0');
    closers.push(() => receiver.close());
    const sender = new QueueSender(receiver.address);
    closers.push(() => sender.close());
    const items = Array.from({ length: MAX_MESSAGE_ITEMS + 1 }, (_, i) => i);
    await sender.send(items);
    const bulks = (await next(receiver, 2)) as unknown[][];
    expect(bulks.map((b) => b.length)).toEqual([MAX_MESSAGE_ITEMS, 1]);
    expect(bulks.flat()).toEqual(items);
  });

  // the agent's hand-backs to a client that died wait in its socket for the resumed client
  it('gets what its producer sent while nothing was bound, once bound again', async () => {
    const first = await BoundQueueReceiver.listen('tcp://127.0.0.1:0');
    // the agent's end (QueueSender's socket), to see when its connection is gone
    const push = new zmq.Push({ linger: 0 });
    closers.push(() => push.close());
    const gone = (async () => {
      for (;;) if ((await push.events.receive()).type === 'disconnect') return;
    })();
    push.connect(first.address);
    await push.send(encode(['before']));
    expect(await next(first, 1)).toEqual([['before']]);
    first.close();
    await withTimeout(gone, 10_000, 'the disconnect');
    await push.send(encode(['while away']));
    const second = await BoundQueueReceiver.listen(first.address);
    closers.push(() => second.close());
    expect(await next(second, 1)).toEqual([['while away']]);
  });

  it('refuses an address that is taken, leaving no socket behind', async () => {
    const taken = await BoundQueueReceiver.listen('tcp://127.0.0.1:0');
    closers.push(() => taken.close());
    await expect(BoundQueueReceiver.listen(taken.address)).rejects.toThrow();
    await expect(BoundQueueSender.listen(taken.address)).rejects.toThrow();
  });
});
