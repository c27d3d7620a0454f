import { describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../../src/generated';
import { UsageError } from '../../../../src/errors';
import { decode, encode } from '../../../../src/transport/codec';
import { NotificationFeed } from '../../../../src/updater/embedded/feed';
import { note } from './feed-fixtures';

describe('NotificationFeed', () => {
  it('delivers bulks with the cursor of their first notification', async () => {
    const feed = new NotificationFeed();
    feed.push([note('a'), note('b')]);
    const watch = feed.watch(1);
    await expect(watch.next()).resolves.toEqual({
      done: false,
      value: { cursor: 1, notifications: [note('b')] },
    });
    const next = watch.next();
    feed.push([note('c')]);
    await expect(next).resolves.toEqual({
      done: false,
      value: { cursor: 2, notifications: [note('c')] },
    });
  });

  it('waits for a cursor beyond the end until the feed reaches it', async () => {
    const feed = new NotificationFeed();
    const watch = feed.watch(2);
    const next = watch.next();
    feed.push([note('a'), note('b'), note('c')]);
    await expect(next).resolves.toEqual({
      done: false,
      value: { cursor: 2, notifications: [note('c')] },
    });
  });

  it('ends a waiting watch on return() and leaves other watches running', async () => {
    const feed = new NotificationFeed();
    const stopped = feed.watch();
    const other = feed.watch();
    const pending = stopped.next();
    const otherPending = other.next();
    await stopped.return?.();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    feed.push([note('a')]);
    await expect(otherPending).resolves.toMatchObject({ done: false, value: { cursor: 0 } });
    await expect(stopped.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it('drains what was accepted, then ends, after end()', async () => {
    const feed = new NotificationFeed();
    const watch = feed.watch();
    feed.push([note('a')]);
    feed.end();
    await expect(watch.next()).resolves.toMatchObject({ done: false });
    await expect(watch.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it('rejects a negative or fractional cursor', () => {
    const feed = new NotificationFeed();
    expect(() => feed.watch(-1)).toThrow(UsageError);
    expect(() => feed.watch(1.5)).toThrow('fromCursor must be an integer >= 0');
  });

  it('decodes chunks pushed as bytes only, and old ones after their objects went, on demand', async () => {
    let decoded = 0;
    const feed = new NotificationFeed((payload) => {
      decoded++;
      return decode(payload) as Notification[];
    });
    const chunks = Array.from({ length: 200 }, (_, c) =>
      Array.from({ length: (c % 5) + 1 }, (__, j) => note(`t${c}.${j}`)),
    );
    // Half as bytes only (as open() pushes a file's records), half with their objects too.
    chunks.forEach((batch, c) => {
      if (c % 2 === 0) feed.pushEncoded(encode(batch), batch.length);
      else feed.pushEncoded(encode(batch), batch.length, batch);
    });
    const all = chunks.flat();
    expect(feed.length).toBe(all.length);
    expect(feed.all()).toEqual(all);
    expect(decoded).toBeGreaterThan(0);
    for (const at of [0, 1, 7, 300, all.length - 1]) expect(feed.at(at)).toEqual(all[at]);
    const seen: Notification[] = [];
    for await (const bulk of feed.watch(3)) {
      expect(bulk.cursor).toBe(3 + seen.length);
      seen.push(...bulk.notifications);
      if (3 + seen.length === all.length) break;
    }
    expect(seen).toEqual(all.slice(3));
  });

  it('refuses pushEncoded without a decoder', () => {
    expect(() => new NotificationFeed().pushEncoded(encode([note('a')]), 1)).toThrow(UsageError);
  });
});
