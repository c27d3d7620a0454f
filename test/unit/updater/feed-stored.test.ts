import { describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../src/generated';
import { InternalError } from '../../../src/errors';
import { decode, encode } from '../../../src/transport/codec';
import { NotificationFeed, type PayloadSource } from '../../../src/updater/feed';

const note = (uid: string): Notification => ({
  kind: 'task',
  uid,
  attempt: 1,
  state: 'NEW',
  ts: 0,
  component: 'test',
});

/** A payload "on disk": counts its reads. */
class Source implements PayloadSource {
  reads = 0;
  constructor(private readonly bytes: Buffer) {}
  read(): Buffer {
    this.reads++;
    return this.bytes;
  }
}

describe('NotificationFeed with stored chunks', () => {
  const batches = Array.from({ length: 100 }, (_, c) =>
    Array.from({ length: (c % 3) + 1 }, (__, j) => note(`t${c}.${j}`)),
  );
  const all = batches.flat();

  it('reads a stored chunk only when its notifications are needed', () => {
    const feed = new NotificationFeed((p) => decode(p) as Notification[]);
    const sources = batches.map((b) => new Source(encode(b)));
    sources.forEach((s, i) => feed.pushStored(s, batches[i]!.length));
    expect(feed.length).toBe(all.length);
    expect(sources.every((s) => s.reads === 0)).toBe(true);
    expect(feed.at(4)).toEqual(all[4]);
    expect(sources.map((s) => s.reads).filter((r) => r > 0)).toEqual([1]);
    expect(feed.all()).toEqual(all);
  });

  it('moves chunks pushed with their bytes to stored ones, keeping their content', async () => {
    const feed = new NotificationFeed((p) => decode(p) as Notification[]);
    for (const b of batches) feed.pushEncoded(encode(b), b.length, b);
    const from = batches.slice(0, 10).flat().length;
    const moved = batches.slice(10, 90);
    const sources = moved.map((b) => new Source(encode(b)));
    feed.moveToStored(
      from,
      sources,
      moved.map((b) => b.length),
    );
    expect(feed.all()).toEqual(all);
    // Chunks outside the hot window had dropped their objects: they are read from the source.
    expect(sources.slice(0, 20).every((s) => s.reads === 1)).toBe(true);
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
    const source = new Source(Buffer.alloc(0));
    expect(() => feed.moveToStored(2, [source], [2])).toThrow(InternalError); // not a chunk start
    expect(() => feed.moveToStored(0, [source], [2])).toThrow(InternalError);
    expect(() => feed.moveToStored(0, [source, source, source, source], [1, 2, 3, 1])).toThrow(
      InternalError,
    );
  });
});
