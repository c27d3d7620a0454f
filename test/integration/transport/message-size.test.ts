import { afterEach, describe, expect, it } from '@jest/globals';
import * as zmq from 'zeromq';
import { TransportError } from '../../../src/errors';
import { withTimeout } from '../../../src/lib/deferred';
import { Bridge } from '../../../src/transport/bridge';
import { encode } from '../../../src/transport/codec';
import { MAX_MESSAGE_BYTES } from '../../../src/transport/frames';
import { QueueReceiver, QueueSender } from '../../../src/transport/queue';

/** The next `n` decoded messages a receiver gets. */
function next(receiver: QueueReceiver, n: number): Promise<unknown[]> {
  const got: unknown[] = [];
  return withTimeout(
    (async () => {
      for await (const m of receiver.messages()) {
        if (!m.ok) throw m.error;
        got.push(m.value);
        if (got.length === n) return got;
      }
      return got;
    })(),
    20_000,
    `${n} messages`,
  );
}

describe('messages over MAX_MESSAGE_BYTES', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  async function queue(): Promise<{ bridge: Bridge; receiver: QueueReceiver }> {
    const bridge = await Bridge.queue();
    const receiver = new QueueReceiver(bridge.endpoints.out);
    closers.push(
      () => bridge.close(),
      () => receiver.close(),
    );
    return { bridge, receiver };
  }

  it('make a listening socket drop the sender, and it goes on taking what fits', async () => {
    const bridge = await Bridge.queue();
    closers.push(() => bridge.close());
    const receiver = new QueueReceiver(bridge.endpoints.out);
    closers.push(() => receiver.close());
    const intruder = new zmq.Push({ linger: 0 });
    closers.push(() => intruder.close());
    const dropped = (async () => {
      for (;;) {
        const ev = await intruder.events.receive();
        if (ev.type === 'disconnect') return ev.type;
      }
    })();
    intruder.connect(bridge.endpoints.in);
    await intruder.send(Buffer.alloc(MAX_MESSAGE_BYTES + 1, 0x61));
    expect(await withTimeout(dropped, 8_000, 'the bridge dropping the sender')).toBe('disconnect');
    const sender = new QueueSender(bridge.endpoints.in);
    closers.push(() => sender.close());
    await sender.send([{ uid: 'fits' }]);
    expect(await next(receiver, 1)).toEqual([[{ uid: 'fits' }]]);
  });

  it('are never sent by a QueueSender: a bulk of large items is halved until each part fits', async () => {
    const { bridge, receiver } = await queue();
    const sender = new QueueSender(bridge.endpoints.in);
    closers.push(() => sender.close());
    const big = 'x'.repeat(Math.floor(MAX_MESSAGE_BYTES / 3));
    const items = ['a', 'b', 'c', 'd'].map((uid) => ({ uid, big }));
    expect(encode(items).length).toBeGreaterThan(MAX_MESSAGE_BYTES);
    await sender.send(items);
    const bulks = (await next(receiver, 2)) as { uid: string }[][];
    expect(bulks.map((b) => b.map((t) => t.uid))).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    // one item that cannot fit is refused to the caller, not sent for a peer to drop
    await expect(sender.send([{ uid: 'huge', big: big + big + big + big }])).rejects.toThrow(
      TransportError,
    );
  }, 30_000);

  it('hand an item too large alone to onOversize, and the items around it go', async () => {
    const { bridge, receiver } = await queue();
    const oversize: [string, number][] = [];
    const sender = new QueueSender(bridge.endpoints.in).onOversize((item, bytes) =>
      oversize.push([(item as { uid: string }).uid, bytes]),
    );
    closers.push(() => sender.close());
    const huge = 'x'.repeat(MAX_MESSAGE_BYTES + 1);
    const bulk = [{ uid: 'a' }, { uid: 'huge', huge }, { uid: 'b' }, { uid: 'c' }];
    await sender.send(bulk);
    const got = (await next(receiver, 2)) as { uid: string }[][];
    expect(got.flat().map((t) => t.uid)).toEqual(['a', 'b', 'c']);
    expect(oversize).toEqual([['huge', expect.any(Number)]]);
    expect(oversize[0]![1]).toBeGreaterThan(MAX_MESSAGE_BYTES);
  }, 30_000);
});
