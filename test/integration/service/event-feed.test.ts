import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { withTimeout } from '../../../src/lib/deferred';
import { silentLogger } from '../../../src/lib/logger';
import { EventFeed, eventText, type FeedLimits } from '../../../src/service/event-feed';
import { EmbeddedStore } from '../../../src/updater';
import { makeNotes } from '../updater/helpers';

/** The ids of the events in SSE text, in order. */
function idsOf(text: string): number[] {
  return [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
}

const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('EventFeed over a real embedded store', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function storeWith(count: number): Promise<EmbeddedStore> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-event-feed-'));
    cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const store = await EmbeddedStore.open(dir);
    cleanup.push(() => store.close());
    if (count > 0) await store.append(makeNotes(count, 'old'));
    return store;
  }

  /** Reads a stream of `feed` from `from` until it has seen event `last` (or it ends). */
  async function read(feed: EventFeed, from: number, last: number): Promise<number[]> {
    const stop = new AbortController();
    const ids: number[] = [];
    await withTimeout(
      (async () => {
        for await (const text of feed.stream(from, stop.signal)) {
          ids.push(...idsOf(text));
          if (ids[ids.length - 1]! >= last) break;
        }
      })(),
      20_000,
      `stream from ${from} to ${last}`,
    );
    stop.abort();
    return ids;
  }

  it('gives every stream each event once, in order: before the feed began, in it, live', async () => {
    const store = await storeWith(300);
    const feed = new EventFeed(store, silentLogger);
    cleanup.push(() => feed.close());
    feed.start(store.size);
    await store.append(makeNotes(200, 'mid'));
    const streams = [0, 150, 300, 420, 500].map((from) => read(feed, from, 800));
    await store.append(makeNotes(300, 'live'));
    const got = await Promise.all(streams);
    expect(got).toEqual([0, 150, 300, 420, 500].map((from) => range(from + 1, 800)));
  });

  it('renders an event as the store holds it, with its position as id', async () => {
    const store = await storeWith(0);
    const feed = new EventFeed(store, silentLogger);
    cleanup.push(() => feed.close());
    feed.start(0);
    const [n] = makeNotes(1, 'one');
    await store.append([n!]);
    const stop = new AbortController();
    const first = await feed.stream(0, stop.signal).next();
    stop.abort();
    expect(first.value).toBe(eventText(1, n!));
    expect(first.value).toBe(`id: 1\nevent: task\ndata: ${JSON.stringify(n)}\n\n`);
  });

  it('lets a stream that fell behind what it keeps read the store, without a gap', async () => {
    const store = await storeWith(0);
    const limits: FeedLimits = { events: 50, chars: 1 << 20, readChars: 1 << 10 };
    let watches = 0;
    const counted = {
      watch: (from?: number) => {
        watches++;
        return store.watch(from);
      },
    };
    const feed = new EventFeed(counted, silentLogger, limits);
    cleanup.push(() => feed.close());
    feed.start(0);
    // a stream that reads one piece, then waits while 1,000 events pass the feed's 50
    const stop = new AbortController();
    const slow = feed.stream(0, stop.signal);
    await store.append(makeNotes(10, 'a'));
    const ids = idsOf((await slow.next()).value as string);
    for (let i = 0; i < 10; i++) await store.append(makeNotes(100, `b${i}`));
    while (ids[ids.length - 1]! < 1_010) ids.push(...idsOf((await slow.next()).value as string));
    stop.abort();
    expect(ids).toEqual(range(1, 1_010));
    expect(watches).toBe(2); // the feed's, and the slow stream's own to catch up
  });

  it('ends its streams when the store closes, and at once when a stream is aborted', async () => {
    const store = await storeWith(5);
    const feed = new EventFeed(store, silentLogger);
    feed.start(5);
    const idle = new AbortController();
    const waiting = feed.stream(5, idle.signal).next();
    idle.abort();
    await expect(withTimeout(waiting, 5_000, 'aborted stream')).resolves.toEqual({
      done: true,
      value: undefined,
    });
    // one at the live tail, one still reading the store from the start: both end
    const tail = read(feed, 5, Number.MAX_SAFE_INTEGER);
    const behind = read(feed, 0, Number.MAX_SAFE_INTEGER);
    await store.append(makeNotes(3, 'last'));
    await store.close();
    await expect(tail).resolves.toEqual([6, 7, 8]);
    await expect(behind).resolves.toEqual(range(1, 8));
  });
});
