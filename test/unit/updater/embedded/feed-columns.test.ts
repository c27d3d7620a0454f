import { describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../../src/generated';
import { InternalError } from '../../../../src/errors';
import { decode, encode } from '../../../../src/transport/codec';
import { NotificationFeed } from '../../../../src/updater/embedded/feed';
import { note, Source } from './feed-fixtures';

/** Chunk c of a feed: 1 to 4 notifications. */
const batchOf = (c: number): Notification[] =>
  Array.from({ length: (c % 4) + 1 }, (_, j) => note(`t${c}.${j}`));

const decoder = (p: Buffer): Notification[] => decode(p) as Notification[];

async function watched(feed: NotificationFeed, from: number): Promise<Notification[]> {
  const seen: Notification[] = [];
  for await (const bulk of feed.watch(from)) {
    expect(bulk.cursor).toBe(from + seen.length);
    expect(bulk.notifications.length).toBeLessThanOrEqual(4096);
    seen.push(...bulk.notifications);
    if (from + seen.length === feed.length) break;
  }
  return seen;
}

describe('NotificationFeed columns', () => {
  // More chunks than a column page holds (8192), so lookups cross pages.
  const CHUNKS = 20_000;
  const batches = Array.from({ length: CHUNKS }, (_, c) => batchOf(c));
  const all = batches.flat();
  const starts: number[] = [];
  batches.reduce((at, b) => (starts.push(at), at + b.length), 0);

  it('finds the chunk of each position at every chunk boundary', () => {
    const feed = new NotificationFeed();
    for (const b of batches) feed.push(b);
    expect(feed.length).toBe(all.length);
    const wrong: number[] = [];
    batches.forEach((b, c) => {
      const start = starts[c]!;
      for (const at of [start - 1, start, start + b.length - 1]) {
        if (at >= 0 && feed.at(at) !== all[at]) wrong.push(at);
      }
    });
    expect(wrong).toEqual([]);
    expect(feed.all()).toEqual(all);
  });

  it('reads chunks spread over several sources, each cold record once for a full pass', async () => {
    const feed = new NotificationFeed(decoder);
    const per = 7_000;
    const sources = [0, 1, 2].map(
      (k) => new Source(batches.slice(k * per, (k + 1) * per).map((b) => encode(b))),
    );
    const used = batches.slice(0, 3 * per);
    used.forEach((b, c) => feed.pushStored(sources[Math.floor(c / per)]!, c % per, b.length));
    const expected = used.flat();
    expect(feed.length).toBe(expected.length);
    expect(sources.every((s) => s.reads.every((r) => r === 0))).toBe(true);
    expect(feed.all()).toEqual(expected);
    expect(sources.every((s) => s.reads.every((r) => r === 1))).toBe(true);
    // A watch from the middle of a chunk of the second source, in bounded bulks.
    const from = starts[per + 5]! + 1;
    expect(await watched(feed, from)).toEqual(expected.slice(from));
    // Positions at the sources' borders.
    for (const c of [per - 1, per, 2 * per - 1, 2 * per]) {
      expect(feed.at(starts[c]!)).toEqual(expected[starts[c]!]);
    }
  });

  it('moves a range of chunks held as bytes to records of a source, then reads them there', async () => {
    const feed = new NotificationFeed(decoder);
    const n = 10_000;
    const payloads = batches.slice(0, n).map((b) => encode(b));
    batches.slice(0, n).forEach((b, c) => feed.pushEncoded(payloads[c]!, b.length, b));
    // Chunks 100 .. 9099 go to records 7 .. 9006 of a source that holds other records first.
    const first = 100;
    const moved = 9_000;
    const source = new Source([
      ...Array.from({ length: 7 }, () => Buffer.alloc(0)),
      ...payloads.slice(first, first + moved),
    ]);
    feed.moveToStored(
      starts[first]!,
      source,
      7,
      batches.slice(first, first + moved).map((b) => b.length),
    );
    const expected = batches.slice(0, n).flat();
    expect(feed.all()).toEqual(expected);
    expect(source.reads.slice(0, 7)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(source.reads.slice(7).every((r) => r === 1)).toBe(true);
    // The hot window (the last 64 chunks) kept its objects: no read for those.
    expect(feed.at(starts[n - 1]!)).toBe(batches[n - 1]![0]);
    expect(await watched(feed, 0)).toEqual(expected);
    expect(Math.max(...source.reads)).toBe(2);
  });

  it('keeps the record an append stored a chunk in when its segment is sealed', () => {
    const feed = new NotificationFeed(decoder);
    const appended = new Source(batches.slice(0, 200).map((b) => encode(b)));
    const sealed = new Source(batches.slice(0, 200).map((b) => encode(b)));
    batches.slice(0, 200).forEach((b, c) => {
      if (c < 100) feed.pushEncoded(encode(b), b.length);
      else feed.pushStored(appended, c, b.length, b);
    });
    feed.moveToStored(
      0,
      sealed,
      0,
      batches.slice(0, 200).map((b) => b.length),
    );
    expect(feed.all()).toEqual(batches.slice(0, 200).flat());
    expect(sealed.reads.slice(0, 100).every((r) => r === 1)).toBe(true);
    expect(sealed.reads.slice(100).every((r) => r === 0)).toBe(true);
    expect(appended.reads.slice(100, 136).every((r) => r === 1)).toBe(true);
    expect(appended.reads.slice(136).every((r) => r === 0)).toBe(true); // hot
  });

  it('refuses a move on an empty feed or past its last chunk, and ignores an empty one', () => {
    const feed = new NotificationFeed(decoder);
    const source = new Source([]);
    feed.moveToStored(0, source, 0, []);
    expect(() => feed.moveToStored(0, source, 0, [1])).toThrow(InternalError);
    feed.pushEncoded(encode(batchOf(0)), 1);
    expect(() => feed.moveToStored(0, source, 0, [1, 1])).toThrow(InternalError);
    expect(feed.all()).toEqual(batchOf(0));
  });
});
