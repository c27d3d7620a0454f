/**
 * The behaviour every StateStore backend must show (docs/state-store.md: one conformance suite
 * runs against every backend). Not a test file: a backend's test file calls describeStoreConformance.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../src/generated';
import { withTimeout } from '../../../src/lib/deferred';
import type { StateStore, WatchBulk } from '../../../src/updater';
import { makeNotes } from './helpers';

export interface OpenedStore {
  store: StateStore;
  /** Removes what the store left behind (files, documents); called after close(). */
  cleanup(): Promise<void>;
}

const WAIT_MS = 5_000;

/**
 * Reads bulks until `count` notifications arrived, checking that each bulk starts where the
 * previous one ended (no gap, no repeat); makes no assumption about bulk boundaries.
 */
async function collect(
  it: AsyncIterator<WatchBulk>,
  from: number,
  count: number,
): Promise<Notification[]> {
  const out: Notification[] = [];
  const follow = async (): Promise<Notification[]> => {
    while (out.length < count) {
      const r = await it.next();
      if (r.done === true) throw new Error(`watch ended after ${out.length} of ${count}`);
      expect(r.value.cursor).toBe(from + out.length);
      expect(r.value.notifications.length).toBeGreaterThan(0);
      out.push(...r.value.notifications);
    }
    return out;
  };
  await withTimeout(follow(), WAIT_MS, `watch delivering ${count} notifications`);
  expect(out).toHaveLength(count);
  return out;
}

export function describeStoreConformance(name: string, open: () => Promise<OpenedStore>): void {
  describe(`StateStore conformance: ${name}`, () => {
    let opened: OpenedStore[] = [];
    const iterators: AsyncIterator<WatchBulk>[] = [];

    const fresh = async (): Promise<StateStore> => {
      const o = await open();
      opened.push(o);
      return o.store;
    };
    const watch = (store: StateStore, from?: number): AsyncIterator<WatchBulk> => {
      const it = store.watch(from)[Symbol.asyncIterator]();
      iterators.push(it);
      return it;
    };

    afterEach(async () => {
      for (const it of iterators.splice(0)) await it.return?.();
      for (const o of opened) {
        await o.store.close();
        await o.cleanup();
      }
      opened = [];
    });

    it('accepts a batch once: the same batch again and duplicates within a batch count zero', async () => {
      const store = await fresh();
      const notes = makeNotes(10);
      await expect(store.append(notes)).resolves.toBe(10);
      await expect(store.append(notes)).resolves.toBe(0);
      const [a, b] = makeNotes(2, 'other');
      await expect(store.append([a!, a!, b!, { ...a!, ts: 5 }])).resolves.toBe(2);
      expect(await store.history()).toEqual([...notes, a, b]);
    });

    it('counts each key once across concurrent overlapping appends, and watch sees each once', async () => {
      const store = await fresh();
      const notes = makeNotes(60);
      const batches = Array.from({ length: 6 }, (_, i) => notes.slice(i * 8, i * 8 + 20));
      const counts = await Promise.all(batches.map((b) => store.append(b)));
      expect(counts.reduce((s, c) => s + c, 0)).toBe(60);
      const history = await store.history();
      expect([...history].sort(byKey)).toEqual([...notes].sort(byKey));
      expect(await collect(watch(store, 0), 0, 60)).toEqual(history);
    });

    it('treats an empty batch as a no-op', async () => {
      const store = await fresh();
      await expect(store.append([])).resolves.toBe(0);
      expect(await store.history()).toEqual([]);
      const notes = makeNotes(3);
      await store.append(notes);
      await expect(store.append([])).resolves.toBe(0);
      expect(await collect(watch(store, 0), 0, 3)).toEqual(notes);
    });

    it('watches from 0 through old and new notifications', async () => {
      const store = await fresh();
      const notes = makeNotes(8);
      await store.append(notes.slice(0, 5));
      const it = watch(store, 0);
      expect(await collect(it, 0, 5)).toEqual(notes.slice(0, 5));
      const pending = collect(it, 5, 3);
      await store.append(notes.slice(5));
      expect(await pending).toEqual(notes.slice(5));
    });

    it('resumes exactly after a cursor: no gap, no repeat', async () => {
      const store = await fresh();
      const notes = makeNotes(12);
      await store.append(notes.slice(0, 4));
      await store.append(notes.slice(4, 8));
      for (const from of [0, 1, 4, 5, 7]) {
        expect({ from, got: await collect(watch(store, from), from, 8 - from) }).toEqual({
          from,
          got: notes.slice(from, 8),
        });
      }
      const atEnd = watch(store, 8);
      const pending = collect(atEnd, 8, 4);
      await store.append(notes.slice(8));
      expect(await pending).toEqual(notes.slice(8));
      expect(await collect(watch(store, 10), 10, 2)).toEqual(notes.slice(10));
    });

    it('gives history per uid and whole, in acceptance order', async () => {
      const store = await fresh();
      const notes = makeNotes(12); // 2 tasks x 6 states
      await store.append(notes.slice(6));
      await store.append(notes.slice(0, 6));
      const accepted = [...notes.slice(6), ...notes.slice(0, 6)];
      const uid = notes[0]!.uid;
      expect(await store.history(uid)).toEqual(accepted.filter((n) => n.uid === uid));
      expect(await store.history()).toEqual(accepted);
      expect(await store.history('no-such-task')).toEqual([]);
    });

    it('keeps out-of-order input as given: it assumes no order of states', async () => {
      const store = await fresh();
      const notes = makeNotes(6).reverse(); // DONE first, NEW last
      const withDetail: Notification = {
        ...makeNotes(1, 'failed')[0]!,
        state: 'FAILED',
        detail: {
          reason: { code: 'E_EXIT_CODE', message: 'boom', component: 'test' },
          exitCode: 3,
        },
      };
      await store.append([...notes, withDetail]);
      expect(await store.history()).toEqual([...notes, withDetail]);
      expect(await collect(watch(store, 0), 0, 7)).toEqual([...notes, withDetail]);
    });

    it('ends a watch on return() even while it waits for news', async () => {
      const store = await fresh();
      await store.append(makeNotes(2));
      const it = watch(store, 2);
      const waiting = it.next();
      await it.return?.();
      await expect(withTimeout(waiting, WAIT_MS, 'watch ending')).resolves.toEqual({
        done: true,
        value: undefined,
      });
    });

    it('ends open watches on close once they delivered what was accepted', async () => {
      const store = await fresh();
      const notes = makeNotes(3);
      await store.append(notes);
      const seen: Notification[] = [];
      const following = (async () => {
        for await (const bulk of store.watch(0)) seen.push(...bulk.notifications);
      })();
      const idle = (async () => {
        for await (const _bulk of store.watch(3)) throw new Error('nothing was appended after 3');
      })();
      await collect(watch(store, 0), 0, 3); // the store holds them before close
      await store.close();
      await withTimeout(Promise.all([following, idle]), WAIT_MS, 'watches ending on close');
      expect(seen).toEqual(notes);
      await expect(store.append(makeNotes(1, 'late'))).rejects.toThrow('closed store');
    });
  });
}

function byKey(a: Notification, b: Notification): number {
  const ka = `${a.uid}/${a.state}`;
  const kb = `${b.uid}/${b.state}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
