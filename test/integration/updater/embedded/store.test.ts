import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../../src/generated';
import { decode, encode } from '../../../../src/transport/codec';
import { deferred } from '../../../../src/lib/deferred';
import { EmbeddedStore, type StoreUnwritableError, type WatchBulk } from '../../../../src/updater';
import { frameRecord, HEADER_BYTES, scanRecords } from '../../../../src/updater/embedded/record';
import { decodeNotifications } from '../../../../src/updater/notification-codec';
import { decodeSummary } from '../../../../src/updater/embedded/segment-summary';
import { makeNotes, prng } from '../helpers';

/** Flips `mask` in byte `at` of the payload of record `record` of a segment file, in place. */
function flipBit(file: string, record: number, at: number, mask: number): void {
  const bytes = fs.readFileSync(file);
  const payload = scanRecords(bytes).payloads[record]!;
  const i = payload.byteOffset - bytes.byteOffset + at;
  bytes[i] = bytes[i]! ^ mask;
  fs.writeFileSync(file, bytes);
}

describe('EmbeddedStore', () => {
  let dirs: string[] = [];
  let stores: EmbeddedStore[] = [];

  const tempDir = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-store-'));
    dirs.push(dir);
    return dir;
  };
  const open = async (dir: string, segmentBytes?: number): Promise<EmbeddedStore> => {
    const store = await EmbeddedStore.open(dir, segmentBytes === undefined ? {} : { segmentBytes });
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
    expect(reopened.recovery).toEqual({
      records: 2,
      dropped: 0,
      tail: 'clean',
      truncatedBytes: 0,
      segments: 1,
      scannedSegments: 0,
    });
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

  it('tells apart keys that differ only in kind, attempt or state', async () => {
    const store = await open(tempDir());
    const [n] = makeNotes(1);
    const variants: Notification[] = [
      n!,
      { ...n!, kind: 'pilot' },
      { ...n!, attempt: 2 },
      { ...n!, attempt: 2 ** 31 },
      { ...n!, state: 'TMGR_SCHEDULING' },
    ];
    await expect(store.append([...variants, ...variants])).resolves.toBe(variants.length);
    expect(await store.history(n!.uid)).toEqual(variants);
  });

  it('forgets the keys of a group whose write failed, holds it, and writes it at a retry', async () => {
    const store = await open(tempDir());
    const notes = makeNotes(30);
    await expect(store.append(notes.slice(0, 10))).resolves.toBe(10);
    // the store's writer (its SegmentWriter's) fails its writes, as a disk gone bad would
    type Writable = { write: (...args: unknown[]) => Promise<unknown> };
    const writer = (store as unknown as { segments: { writer: Writable } }).segments.writer;
    const write = writer.write.bind(writer);
    writer.write = () => Promise.reject(Object.assign(new Error('disk full'), { code: 'EIO' }));
    const failed = deferred<StoreUnwritableError | undefined>();
    const off = store.onUnwritable((e) => failed.resolve(e));
    const held = store.append(notes.slice(5, 20));
    await expect(failed.promise).resolves.toMatchObject({ errno: 'EIO', held: 15 });
    off();
    writer.write = write;
    await expect(held).resolves.toBe(10);
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
      expect(store.recovery).toMatchObject({
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
      expect(store.recovery).toMatchObject({
        records: 2,
        dropped: 3,
        tail: 'clean',
        truncatedBytes: 0,
      });
      expect(await store.history()).toEqual([good]);
    });
  });

  describe('segments', () => {
    /** Bytes per segment: a few records of 10 notifications each. */
    const SEGMENT = 4_000;
    const SEGMENT_FILE = /^store(?:\.([0-9]+))?\.log$/;

    /** Segment files of `dir`, in segment order. */
    const segmentFiles = (dir: string): string[] =>
      fs
        .readdirSync(dir)
        .filter((name) => SEGMENT_FILE.test(name))
        .sort(
          (a, b) => Number(SEGMENT_FILE.exec(a)![1] ?? 0) - Number(SEGMENT_FILE.exec(b)![1] ?? 0),
        )
        .map((name) => path.join(dir, name));

    /** Notifications in each record of a segment file, in order. */
    const recordCounts = (file: string): number[] =>
      scanRecords(fs.readFileSync(file)).payloads.map((p) => (decode(p) as unknown[]).length);

    /** Every bulk of watch(from) up to what the store holds now. */
    const watchAll = async (store: EmbeddedStore, from = 0): Promise<WatchBulk[]> => {
      const bulks: WatchBulk[] = [];
      const it = store.watch(from);
      try {
        for (let seen = from; seen < store.size;) {
          const r = await it.next();
          if (r.done === true) break;
          bulks.push(r.value);
          seen = r.value.cursor + r.value.notifications.length;
        }
      } finally {
        await it.return?.();
      }
      return bulks;
    };

    /**
     * toEqual for long arrays without its cost (58 ms per 3,000 notifications here): equal
     * serializations pass at once; anything else gets the full toEqual and its diff.
     */
    const expectSame = (actual: unknown, expected: unknown): void => {
      if (JSON.stringify(actual) !== JSON.stringify(expected)) expect(actual).toEqual(expected);
    };

    /** What a test compares between two opens of a store. */
    const contents = async (
      store: EmbeddedStore,
      uids: string[],
    ): Promise<{ history: Notification[]; bulks: WatchBulk[]; resumed: WatchBulk[] }> => {
      const perUid = await Promise.all(uids.map((uid) => store.history(uid)));
      const history = await store.history();
      for (const [i, uid] of uids.entries()) {
        expectSame(
          perUid[i],
          history.filter((n) => n.uid === uid),
        );
      }
      return { history, bulks: await watchAll(store), resumed: await watchAll(store, 1_234) };
    };

    /**
     * A closed store of 3,000 notifications appended 10 at a time, in an order unlike the
     * uids' (a uid's notifications lie in several segments), over many small segments.
     */
    const pristine = async (): Promise<{
      dir: string;
      notes: Notification[];
      uids: string[];
      before: Awaited<ReturnType<typeof contents>>;
    }> => {
      const dir = tempDir();
      const store = await open(dir, SEGMENT);
      const notes = makeNotes(3_000);
      const order = [...notes].sort((a, b) => (a.uid < b.uid ? -1 : 1));
      for (let i = 0; i < order.length; i += 10) await store.append(order.slice(i, i + 10));
      const uids = [notes[0]!.uid, notes[777]!.uid, notes[2_999]!.uid];
      // Read while live too: old chunks of sealed segments come back from their files.
      const before = await contents(store, uids);
      expectSame(before.history, order);
      await store.close();
      return { dir, notes, uids, before };
    };

    /** A copy of a store directory, to damage without touching the original. */
    const copyOf = (dir: string): string => {
      const copy = tempDir();
      fs.cpSync(dir, copy, { recursive: true });
      return copy;
    };

    it('rolls at the segment size, summarizes each sealed segment, and reopens the same', async () => {
      const { dir, notes, uids, before } = await pristine();
      const files = segmentFiles(dir);
      expect(files.length).toBeGreaterThan(10);
      expect(path.basename(files[0]!)).toBe('store.log');
      for (const [i, file] of files.entries()) {
        expect(fs.statSync(file).size).toBeLessThanOrEqual(SEGMENT);
        expect(fs.existsSync(`${file}.sum`)).toBe(i < files.length - 1);
      }

      const reopened = await open(dir, SEGMENT);
      expect(reopened.recovery).toEqual({
        records: 300,
        dropped: 0,
        tail: 'clean',
        truncatedBytes: 0,
        segments: files.length,
        scannedSegments: 0,
      });
      expectSame(await contents(reopened, uids), before);
      await expect(reopened.append([...notes].reverse())).resolves.toBe(0);
      const more = makeNotes(120, 'late');
      for (let i = 0; i < more.length; i += 10) {
        await expect(reopened.append(more.slice(i, i + 10))).resolves.toBe(10);
      }
      await expect(reopened.append(more)).resolves.toBe(0);
      expect(segmentFiles(dir).length).toBeGreaterThan(files.length);
      expectSame(await reopened.history(), [...before.history, ...more]);
      await reopened.close();

      // Another segment size changes only where the next segment starts.
      const bigger = await open(dir);
      expect(bigger.recovery.scannedSegments).toBe(0);
      expectSame(await bigger.history(), [...before.history, ...more]);
      expect(await bigger.history(more[7]!.uid)).toEqual(
        more.filter((n) => n.uid === more[7]!.uid),
      );
    });

    it('decodes a sealed segment whose summary is missing, damaged or stale, and rewrites it', async () => {
      const { dir, uids, before } = await pristine();
      const summary = (d: string, n: number): string => path.join(d, `store.${n}.log.sum`);
      const damages: [string, (d: string) => void][] = [
        ['missing', (d) => fs.rmSync(summary(d, 3))],
        [
          'a byte changed',
          (d) => {
            const bytes = fs.readFileSync(summary(d, 3));
            bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0x04;
            fs.writeFileSync(summary(d, 3), bytes);
          },
        ],
        ['cut short', (d) => fs.truncateSync(summary(d, 3), 100)],
        ['empty', (d) => fs.writeFileSync(summary(d, 3), '')],
        ['of another segment', (d) => fs.copyFileSync(summary(d, 2), summary(d, 3))],
      ];
      for (const [what, damage] of damages) {
        const copy = copyOf(dir);
        damage(copy);
        const store = await open(copy, SEGMENT);
        expect({ what, scanned: store.recovery.scannedSegments }).toEqual({ what, scanned: 1 });
        expectSame(await contents(store, uids), before);
        await store.close();
        expect(() => decodeSummary(fs.readFileSync(summary(copy, 3)))).not.toThrow();
        const again = await open(copy, SEGMENT);
        expect(again.recovery.scannedSegments).toBe(0);
        expect((await again.history()).length).toBe(before.history.length);
        await again.close();
      }

      // The segment lost its last record behind its summary's back: the summary describes a
      // longer file, so the segment is decoded, and holds what is left of it. The summaries
      // after it number their positions from a later start: those segments are decoded too.
      const copy = copyOf(dir);
      const seg3 = path.join(copy, 'store.3.log');
      const bytes = fs.readFileSync(seg3);
      const payloads = scanRecords(bytes).payloads;
      const lastStart = payloads[payloads.length - 1]!.byteOffset - bytes.byteOffset - HEADER_BYTES;
      fs.truncateSync(seg3, lastStart);
      const lost = (decodeNotifications(payloads[payloads.length - 1]!) as Notification[]).map(
        (n) => n.ts,
      );
      const store = await open(copy, SEGMENT);
      const sealed = segmentFiles(copy).length - 1;
      expect(store.recovery).toMatchObject({ scannedSegments: sealed - 3, tail: 'clean' });
      expectSame(
        await store.history(),
        before.history.filter((n) => !lost.includes(n.ts)),
      );
    });

    it('reopens after a crash between sealing a segment and writing its summary', async () => {
      const { dir, uids, before } = await pristine();
      const files = segmentFiles(dir);
      // Crash right after the roll: the next segment exists, empty; the sealed one has no summary.
      const sealed = files[files.length - 1]!;
      const next = path.join(dir, `store.${files.length}.log`);
      fs.writeFileSync(next, '');
      const store = await open(dir, SEGMENT);
      expect(store.recovery).toMatchObject({
        segments: files.length + 1,
        scannedSegments: 1,
        tail: 'clean',
      });
      expect(fs.existsSync(`${sealed}.sum`)).toBe(true);
      expect(store.file).toBe(next);
      expectSame(await contents(store, uids), before);
      const more = makeNotes(5, 'after');
      await expect(store.append(more)).resolves.toBe(5);
      await store.close();
      const reopened = await open(dir, SEGMENT);
      expect(reopened.recovery.scannedSegments).toBe(0);
      expectSame(await reopened.history(), [...before.history, ...more]);
    });

    it('loses only the torn record when the tail segment is cut at any offset', async () => {
      const { dir, before } = await pristine();
      const files = segmentFiles(dir);
      const tailFile = files[files.length - 1]!;
      const tail = fs.readFileSync(tailFile);
      const inSealed = before.history.length - recordCounts(tailFile).reduce((a, b) => a + b, 0);
      const ends = scanRecords(tail).payloads.map((p) => p.byteOffset - tail.byteOffset + p.length);
      const counts = recordCounts(tailFile);
      const rand = prng(20261122);
      const offsets = [
        0,
        1,
        HEADER_BYTES,
        ends[0]!,
        ends[0]! + 3,
        tail.length - 1,
        ...Array.from({ length: 4 }, () => Math.floor(rand() * tail.length)),
      ];
      for (const offset of offsets) {
        const copy = copyOf(dir);
        const cut = path.join(copy, path.basename(tailFile));
        fs.truncateSync(cut, offset);
        const whole = ends.filter((e) => e <= offset).length;
        const kept = before.history.slice(
          0,
          inSealed + counts.slice(0, whole).reduce((a, b) => a + b, 0),
        );
        const goodBytes = whole === 0 ? 0 : ends[whole - 1]!;

        const store = await open(copy, SEGMENT);
        expectSame({ offset, history: await store.history() }, { offset, history: kept });
        expect(store.recovery.tail).toBe(goodBytes === offset ? 'clean' : 'torn');
        expect(store.recovery.scannedSegments).toBe(0);
        expect(fs.statSync(cut).size).toBe(goodBytes);
        const extra = makeNotes(4, `after${offset}`);
        await expect(store.append(extra)).resolves.toBe(4);
        await store.close();

        const reopened = await open(copy, SEGMENT);
        expectSame(
          { offset, history: await reopened.history() },
          { offset, history: [...kept, ...extra] },
        );
        expect(reopened.recovery.tail).toBe('clean');
        await reopened.close();
      }
    });

    it('opens an old single-file store.log: as the tail, or sealed once if over the size', async () => {
      const dir = tempDir();
      const batches = Array.from({ length: 50 }, (_, i) => makeNotes(10, `old${i}`));
      fs.writeFileSync(
        path.join(dir, 'store.log'),
        Buffer.concat(batches.map((b) => frameRecord(encode(b)))),
      );
      const size = fs.statSync(path.join(dir, 'store.log')).size;
      expect(size).toBeGreaterThan(SEGMENT);
      const all = batches.flat();

      // Under the default size it simply is the tail segment.
      const asTail = copyOf(dir);
      const small = await open(asTail);
      expect(small.recovery).toMatchObject({ records: 50, segments: 1, tail: 'clean' });
      expect(await small.history()).toEqual(all);
      await small.append(makeNotes(3, 'new'));
      await small.close();
      expect(fs.statSync(path.join(asTail, 'store.log')).size).toBeGreaterThan(size);

      // Over the segment size it is decoded once, sealed with a summary, and appends go on in
      // store.1.log.
      const store = await open(dir, SEGMENT);
      expect(store.recovery).toMatchObject({ records: 50, segments: 2, tail: 'clean' });
      expect(fs.existsSync(path.join(dir, 'store.log.sum'))).toBe(true);
      expect(store.file).toBe(path.join(dir, 'store.1.log'));
      const more = makeNotes(6, 'new');
      await expect(store.append(more)).resolves.toBe(6);
      expect(await store.history(all[123]!.uid)).toEqual(
        all.filter((n) => n.uid === all[123]!.uid),
      );
      await store.close();
      expect(fs.statSync(path.join(dir, 'store.log')).size).toBe(size);
      const reopened = await open(dir, SEGMENT);
      expect(reopened.recovery).toMatchObject({ records: 51, segments: 2, scannedSegments: 0 });
      expect(await reopened.history()).toEqual([...all, ...more]);
      await expect(reopened.append(all)).resolves.toBe(0);
    });

    it('cuts at a damaged record of a sealed segment and sets the later segments aside', async () => {
      const { dir } = await pristine();
      const files = segmentFiles(dir);
      const history = await (async () => {
        const s = await open(dir, SEGMENT);
        const h = await s.history();
        await s.close();
        return h;
      })();
      const inFirst = (k: number): number =>
        files.slice(0, k).reduce((sum, f) => sum + recordCounts(f).reduce((a, b) => a + b, 0), 0);

      // A bit flipped in segment 2's second record, its summary gone: found when decoding it.
      const damaged = copyOf(dir);
      const seg2 = path.join(damaged, 'store.2.log');
      flipBit(seg2, 1, 2, 0x40);
      fs.rmSync(`${seg2}.sum`);
      const store = await open(damaged, SEGMENT);
      const keptRecords = inFirst(2) + recordCounts(files[2]!)[0]!;
      expect(store.recovery).toMatchObject({ tail: 'crc-mismatch', segments: 3 });
      expectSame(await store.history(), history.slice(0, keptRecords));
      expect(store.file).toBe(seg2);
      expect(fs.existsSync(path.join(damaged, 'store.3.log'))).toBe(false);
      expect(fs.existsSync(path.join(damaged, 'store.3.log.damaged'))).toBe(true);
      expect(fs.existsSync(path.join(damaged, 'store.3.log.sum'))).toBe(false);
      await store.close();

      // A missing segment: the ones after it are set aside; the one before it is the tail.
      const gap = copyOf(dir);
      fs.rmSync(path.join(gap, 'store.2.log'));
      const gapped = await open(gap, SEGMENT);
      expect(gapped.recovery).toMatchObject({ segments: 2, scannedSegments: 0 });
      expect(gapped.recovery.truncatedBytes).toBeGreaterThan(0);
      expectSame(await gapped.history(), history.slice(0, inFirst(2)));
      expect(fs.existsSync(path.join(gap, 'store.1.log.sum'))).toBe(false);
      await expect(gapped.append(makeNotes(2, 'gap'))).resolves.toBe(2);
    });

    it('reports a sealed segment changed in place after sealing when it is read back', async () => {
      const { dir } = await pristine();
      const seg1 = path.join(dir, 'store.1.log');
      flipBit(seg1, 0, 1, 0x01);
      // Same size, same last record: the summary is taken; the record's crc catches it on read.
      const store = await open(dir, SEGMENT);
      expect(store.recovery.scannedSegments).toBe(0);
      await expect(store.history()).rejects.toMatchObject({
        code: 'E_STORE',
        message: expect.stringContaining('changed after it was sealed') as unknown,
      });
    });

    it('refuses a segment size that is not an integer from 1 to 2^31 - 1', async () => {
      for (const segmentBytes of [0, 1.5, 2 ** 31, Number.NaN]) {
        await expect(EmbeddedStore.open(tempDir(), { segmentBytes })).rejects.toThrow(
          'segmentBytes must be an integer from 1 to 2147483647',
        );
      }
    });
  });
});
