import { describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../../src/generated';
import { InternalError } from '../../../../src/errors';
import { decode, encode } from '../../../../src/transport/codec';
import { NotificationFeed } from '../../../../src/updater/embedded/feed';
import { note, Source } from './feed-fixtures';

describe('NotificationFeed with stored chunks', () => {
  const batches = Array.from({ length: 100 }, (_, c) =>
    Array.from({ length: (c % 3) + 1 }, (__, j) => note(`t${c}.${j}`)),
  );
  const all = batches.flat();

  it('reads a stored chunk only when its notifications are needed', () => {
    const feed = new NotificationFeed((p) => decode(p) as Notification[]);
    const source = new Source(batches.map((b) => encode(b)));
    batches.forEach((b, r) => feed.pushStored(source, r, b.length));
    expect(feed.length).toBe(all.length);
    expect(source.reads.every((r) => r === 0)).toBe(true);
    expect(feed.at(4)).toEqual(all[4]);
    expect(source.reads.filter((r) => r > 0)).toEqual([1]);
    expect(feed.all()).toEqual(all);
  });

  it('moves chunks pushed with their bytes to stored ones, keeping their content', async () => {
    const feed = new NotificationFeed((p) => decode(p) as Notification[]);
    for (const b of batches) feed.pushEncoded(encode(b), b.length, b);
    const from = batches.slice(0, 10).flat().length;
    const moved = batches.slice(10, 90);
    const source = new Source(moved.map((b) => encode(b)));
    feed.moveToStored(
      from,
      source,
      0,
      moved.map((b) => b.length),
    );
    expect(feed.all()).toEqual(all);
    // Chunks outside the hot window had dropped their objects: they are read from the source.
    expect(source.reads.slice(0, 20).every((r) => r === 1)).toBe(true);
    const seen: Notification[] = [];
    for await (const bulk of feed.watch(0)) {
      seen.push(...bulk.notifications);
      if (seen.length === all.length) break;
    }
    expect(seen).toEqual(all);
  });

  it('refuses a move that does not line up with its chunks', () => {
    const feed = new NotificationFeed((p) => decode(p) as Notification[]);
    for (const b of batches.slice(0, 3)) feed.pushEncoded(encode(b), b.length);
    const source = new Source([]);
    expect(() => feed.moveToStored(2, source, 0, [2])).toThrow(InternalError); // not a chunk start
    expect(() => feed.moveToStored(0, source, 0, [2])).toThrow(InternalError);
    expect(() => feed.moveToStored(0, source, 0, [1, 2, 3, 1])).toThrow(InternalError);
  });
});
