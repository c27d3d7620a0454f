import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../src/generated';
import { encode } from '../../../src/transport/codec';
import { EmbeddedStore } from '../../../src/updater';
import { frameRecord, HEADER_BYTES } from '../../../src/updater/record';
import { makeNotes, prng } from './helpers';

describe('EmbeddedStore', () => {
  let dirs: string[] = [];
  let stores: EmbeddedStore[] = [];

  const tempDir = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-store-'));
    dirs.push(dir);
    return dir;
  };
  const open = async (dir: string): Promise<EmbeddedStore> => {
    const store = await EmbeddedStore.open(dir);
    stores.push(store);
    return store;
  };

  beforeEach(() => {
    dirs = [];
    stores = [];
  });

  afterEach(async () => {
    await Promise.all(stores.map((s) => s.close()));
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('accepts a batch once: the same batch again and duplicates within a batch count zero', async () => {
    const store = await open(tempDir());
    const notes = makeNotes(10);
    await expect(store.append(notes)).resolves.toBe(10);
    await expect(store.append(notes)).resolves.toBe(0);
    const [a, b] = makeNotes(2, 'other');
    await expect(store.append([a!, a!, b!, { ...a!, ts: 5 }])).resolves.toBe(2);
    expect(store.size).toBe(12);
  });

  it('combines appends made during a write into one record (group commit)', async () => {
    const dir = tempDir();
    const store = await open(dir);
    const notes = makeNotes(500);
    const counts = await Promise.all(
      Array.from({ length: 50 }, (_, i) => store.append(notes.slice(i * 10, i * 10 + 10))),
    );
    expect(counts).toEqual(Array<number>(50).fill(10));
    await store.close();
    const reopened = await open(dir);
    expect(reopened.size).toBe(500);
    // The first append starts a write at once; the 49 queued behind it share the next one.
    expect(reopened.recovery.records).toBeLessThanOrEqual(2);
  });

  it('watches from 0 through old and new notifications, and resumes exactly after a cursor', async () => {
    const store = await open(tempDir());
    const notes = makeNotes(8);
    await store.append(notes.slice(0, 5));
    const all = store.watch(0);
    const first = await all.next();
    expect(first.value).toEqual({ cursor: 0, notifications: notes.slice(0, 5) });
    const pending = all.next();
    await store.append(notes.slice(5));
    expect((await pending).value).toEqual({ cursor: 5, notifications: notes.slice(5) });

    const resumed = store.watch(6);
    expect((await resumed.next()).value).toEqual({ cursor: 6, notifications: notes.slice(6) });
    // return() ends a watch even while it waits for news.
    const waiting = resumed.next();
    await resumed.return?.();
    await expect(waiting).resolves.toEqual({ done: true, value: undefined });
    await all.return?.();
  });

  it('ends a watch on close once it has delivered what was accepted', async () => {
    const store = await open(tempDir());
    await store.append(makeNotes(3));
    const seen: number[] = [];
    const following = (async () => {
      for await (const bulk of store.watch(0)) seen.push(bulk.notifications.length);
    })();
    await store.close();
    await following;
    expect(seen).toEqual([3]);
    await expect(store.append(makeNotes(1, 'late'))).rejects.toThrow('closed store');
  });

  it('gives history per uid and whole, in acceptance order', async () => {
    const store = await open(tempDir());
    const notes = makeNotes(12); // 2 tasks x 6 states
    await store.append(notes.slice(6));
    await store.append(notes.slice(0, 6));
    const uid = notes[0]!.uid;
    expect(await store.history(uid)).toEqual(
      [...notes.slice(6), ...notes.slice(0, 6)].filter((n) => n.uid === uid),
    );
    expect(await store.history()).toEqual([...notes.slice(6), ...notes.slice(0, 6)]);
    expect(await store.history('no-such-task')).toEqual([]);
  });

  it('reopens with the same content in the same order', async () => {
    const dir = tempDir();
    const store = await open(dir);
    const notes = makeNotes(100);
    await store.append(notes.slice(50));
    await store.append(notes.slice(0, 50));
    const before = await store.history();
    await store.close();
    const reopened = await open(dir);
    expect(await reopened.history()).toEqual(before);
    expect(reopened.recovery).toEqual({ records: 2, dropped: 0, tail: 'clean', truncatedBytes: 0 });
    await expect(reopened.append(notes)).resolves.toBe(0);
  });

  it('reopens a long file (old records kept as bytes) with the same history, per uid too', async () => {
    const dir = tempDir();
    const store = await open(dir);
    const notes = makeNotes(3_000);
    const order = [...notes].sort((a, b) => (a.uid < b.uid ? -1 : 1));
    for (let i = 0; i < order.length; i += 10) await store.append(order.slice(i, i + 10));
    const before = await store.history();
    const uid = notes[1_234]!.uid;
    const mine = await store.history(uid);
    expect(mine).toHaveLength(6);
    await store.close();
    const reopened = await open(dir);
    expect(reopened.recovery.records).toBe(300);
    expect(await reopened.history()).toEqual(before);
    expect(await reopened.history(uid)).toEqual(mine);
    await expect(reopened.append([...notes].reverse())).resolves.toBe(0);
    const more = makeNotes(12, 'late');
    await expect(reopened.append([...more, ...more])).resolves.toBe(12);
    expect(await reopened.history(more[0]!.uid)).toEqual(
      more.filter((n) => n.uid === more[0]!.uid),
    );
  });

  it('tells apart keys that differ only in kind or attempt', async () => {
    const store = await open(tempDir());
    const [n] = makeNotes(1);
    const variants: Notification[] = [
      n!,
      { ...n!, kind: 'pilot' },
      { ...n!, attempt: 2 },
      { ...n!, attempt: 2 ** 31 },
      { ...n!, state: 'A'.repeat(5_000) },
    ];
    await expect(store.append([...variants, ...variants])).resolves.toBe(variants.length);
    expect(await store.history(n!.uid)).toEqual(variants);
  });

  it('forgets the keys of a group whose write failed, and keeps the ones before it', async () => {
    const store = await open(tempDir());
    const notes = makeNotes(30);
    await expect(store.append(notes.slice(0, 10))).resolves.toBe(10);
    const fh = (store as unknown as { fh: { write: (...args: unknown[]) => Promise<unknown> } }).fh;
    const write = fh.write.bind(fh);
    fh.write = () => Promise.reject(new Error('disk full'));
    await expect(store.append(notes.slice(5, 20))).rejects.toThrow('disk full');
    fh.write = write;
    await expect(store.append(notes.slice(5, 20))).resolves.toBe(10);
    await expect(store.append(notes)).resolves.toBe(10);
    expect(await store.history()).toEqual([...notes.slice(0, 20), ...notes.slice(20)]);
    expect(await store.history(notes[12]!.uid)).toEqual(
      notes.filter((n) => n.uid === notes[12]!.uid),
    );
  });

  describe('a damaged file', () => {
    const batches = [3, 1, 40, 7, 25, 12].map((n, i) => makeNotes(n, `b${i}`));
    const expectedUpTo = (bytes: number, ends: number[]): Notification[] =>
      batches.filter((_, i) => ends[i]! <= bytes).flat();

    /** Writes one record per batch and returns the file with each record's end offset. */
    const pristine = async (): Promise<{ file: Buffer; ends: number[] }> => {
      const dir = tempDir();
      const store = await open(dir);
      const ends: number[] = [];
      for (const b of batches) {
        await store.append(b);
        ends.push(fs.statSync(store.file).size);
      }
      await store.close();
      return { file: fs.readFileSync(store.file), ends };
    };

    it('loses only the torn record when cut at any offset, and takes appends after', async () => {
      const { file, ends } = await pristine();
      const lastStart = ends[ends.length - 2]!;
      const rand = prng(20240521);
      const offsets = [
        lastStart + 1, // inside the last header
        lastStart + HEADER_BYTES - 1,
        lastStart + HEADER_BYTES, // header complete, payload empty
        lastStart + HEADER_BYTES + 5, // inside the last payload
        file.length - 1,
        ...Array.from(
          { length: 8 },
          () => lastStart + Math.floor(rand() * (file.length - lastStart)),
        ),
        ...Array.from({ length: 8 }, () => Math.floor(rand() * file.length)),
      ];
      for (const offset of offsets) {
        const dir = tempDir();
        const storeFile = path.join(dir, 'store.log');
        fs.writeFileSync(storeFile, file.subarray(0, offset));
        const kept = expectedUpTo(offset, ends);
        const goodBytes = Math.max(0, ...ends.filter((e) => e <= offset));

        const store = await open(dir);
        expect({ offset, history: await store.history() }).toEqual({ offset, history: kept });
        expect(store.recovery.tail).toBe(goodBytes === offset ? 'clean' : 'torn');
        expect(fs.statSync(storeFile).size).toBe(goodBytes);
        const extra = makeNotes(4, `after${offset}`);
        await expect(store.append(extra)).resolves.toBe(4);
        await store.close();

        const reopened = await open(dir);
        expect(await reopened.history()).toEqual([...kept, ...extra]);
        expect(reopened.recovery.tail).toBe('clean');
        await reopened.close();
      }
    });

    it('detects a garbage byte in the last record by its crc', async () => {
      const { file, ends } = await pristine();
      const lastStart = ends[ends.length - 2]!;
      const damaged = Buffer.from(file);
      const at =
        lastStart + HEADER_BYTES + Math.floor((file.length - lastStart - HEADER_BYTES) / 2);
      damaged[at] = damaged[at]! ^ 0xff;
      const dir = tempDir();
      fs.writeFileSync(path.join(dir, 'store.log'), damaged);
      const store = await open(dir);
      expect(store.recovery).toEqual({
        records: batches.length - 1,
        dropped: 0,
        tail: 'crc-mismatch',
        truncatedBytes: file.length - lastStart,
      });
      expect(await store.history()).toEqual(batches.slice(0, -1).flat());
    });

    it('drops, counts and skips invalid notifications read back from an intact record', async () => {
      const dir = tempDir();
      const [good, other] = makeNotes(2);
      const record = frameRecord(encode([good, { foo: 1 }, { ...other, attempt: 0 }]));
      fs.writeFileSync(
        path.join(dir, 'store.log'),
        Buffer.concat([record, frameRecord(encode({ not: 'an array' }))]),
      );
      const store = await open(dir);
      expect(store.recovery).toEqual({ records: 2, dropped: 3, tail: 'clean', truncatedBytes: 0 });
      expect(await store.history()).toEqual([good]);
    });
  });
});
