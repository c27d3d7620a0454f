import { afterEach, describe, expect, it } from '@jest/globals';
import { withTimeout } from '../../../src/lib/deferred';
import { Bridge } from '../../../src/transport/bridge';
import { MAX_MESSAGE_ITEMS, QueueReceiver, QueueSender } from '../../../src/transport/queue';

describe('QueueSender', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('sends a long bulk as messages of at most MAX_MESSAGE_ITEMS items, in order', async () => {
    const bridge = await Bridge.queue();
    closers.push(() => bridge.close());
    const sender = new QueueSender(bridge.endpoints.in);
    const receiver = new QueueReceiver(bridge.endpoints.out);
    closers.push(
      () => receiver.close(),
      () => sender.close(),
    );
    const n = 2 * MAX_MESSAGE_ITEMS + 7;
    const items = Array.from({ length: n }, (_, i) => ({ uid: `task.${i}` }));
    await sender.send(items);
    await sender.send({ not: 'an array' }); // anything else goes as it is
    const messages: unknown[] = [];
    await withTimeout(
      (async () => {
        for await (const m of receiver.messages()) {
          if (!m.ok) throw m.error;
          messages.push(m.value);
          if (messages.length === 4) return;
        }
      })(),
      10_000,
      'four messages',
    );
    const bulks = messages.slice(0, 3) as unknown[][];
    expect(bulks.map((b) => b.length)).toEqual([MAX_MESSAGE_ITEMS, MAX_MESSAGE_ITEMS, 7]);
    expect(bulks.flat()).toEqual(items);
    expect(messages[3]).toEqual({ not: 'an array' });
  }, 20_000);
});
