import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { MongoClient } from 'mongodb';
import { MirrorAheadError, SessionMirror } from '../../../../src/updater/mongodb/mirror';
import { PART_CHARS } from '../../../../src/updater/mongodb/mirror-plan';
import { MongoStore } from '../../../../src/updater/mongodb/store';
import { removeMongoSession } from '../../../support/mongodb';

/**
 * A session's mirror (its journal, key and delivered counters kept in its database for a resume
 * without its directory), against a real server only: set PILOTFISH_MONGODB_URI.
 */
const uri = process.env['PILOTFISH_MONGODB_URI'];
const DB = 'pilotfish_test';
const withServer = uri !== undefined && uri !== '';
const d = withServer ? describe : describe.skip;
const title = withServer
  ? 'SessionMirror'
  : 'SessionMirror (skipped: PILOTFISH_MONGODB_URI is not set; no MongoDB server can be installed here)';

const KEY = { publicKey: 'pub-key', secretKey: 'secret-key' };

d(title, () => {
  const opened: MongoStore[] = [];
  async function open(session = `test-${randomUUID()}`): Promise<MongoStore> {
    const store = await MongoStore.open(uri!, session, { db: DB });
    opened.push(store);
    return store;
  }
  afterEach(async () => {
    for (const s of opened.splice(0)) {
      await s.close();
      await removeMongoSession(uri!, DB, s.session);
    }
  });

  it('keeps the key, every entry in order (one larger than a document may be) and the latest counts', async () => {
    const store = await open();
    const mirror = await SessionMirror.create(store, KEY);
    const big = { t: 'tasks', blob: 'x'.repeat(PART_CHARS * 2 + 10) };
    const entries = [
      { t: 'session', n: 0 },
      big,
      ...Array.from({ length: 150 }, (_, n) => ({ n })),
    ];
    mirror.append(entries.slice(0, 2));
    mirror.append(entries.slice(2));
    await mirror.settled();
    expect(mirror.behind).toBe(0);
    mirror.delivered([3, 4]);
    const live = [5, 6];
    mirror.delivered(live);
    live[2] = 7; // read when written: the latest counts go
    expect(await mirror.close(10_000)).toBe(0);
    const held = await SessionMirror.read(store);
    expect(held?.key).toEqual(KEY);
    expect(held?.entries).toEqual(entries);
    expect(held?.delivered).toEqual([5, 6, 7]);
  }, 60_000);

  it('refuses a new session whose uid the database holds a journal of', async () => {
    const store = await open();
    const first = await SessionMirror.create(store, KEY);
    first.append([{ n: 0 }]);
    await first.close(10_000);
    await expect(SessionMirror.create(store, KEY)).rejects.toThrow(
      `database '${DB}' holds a journal of session ${store.session} already`,
    );
  });

  it('holds nothing of a session it never saw', async () => {
    expect(await SessionMirror.read(await open())).toBeUndefined();
  });

  it('a resumed session sends the entries the database lacks, and refuses a directory that is behind it', async () => {
    const store = await open();
    const first = await SessionMirror.create(store, KEY);
    first.append([{ n: 0 }, { n: 1 }]);
    await first.close(10_000);
    // the client died before entries 2 and 3 reached the database: its directory has them
    const again = await SessionMirror.resume(store, [{ n: 0 }, { n: 1 }, { n: 2 }, { n: 3 }], KEY);
    again.append([{ n: 4 }]);
    expect(await again.close(10_000)).toBe(0);
    expect((await SessionMirror.read(store))?.entries).toEqual([0, 1, 2, 3, 4].map((n) => ({ n })));
    // a directory left behind by a client that was since resumed elsewhere
    await expect(SessionMirror.resume(store, [{ n: 0 }], KEY)).rejects.toBeInstanceOf(
      MirrorAheadError,
    );
  }, 60_000);

  it('reads a journal up to an entry a dead client left incomplete', async () => {
    const store = await open();
    const mirror = await SessionMirror.create(store, undefined);
    mirror.append([{ n: 0 }, { n: 1 }]);
    await mirror.close(10_000);
    const client = new MongoClient(uri!);
    try {
      // entry 2's first part of two, and an entry after it
      await client
        .db(DB)
        .collection('journals')
        .insertMany([
          { session: store.session, n: 2, i: 0, of: 2, text: '{"n":' },
          { session: store.session, n: 3, i: 0, of: 1, text: '{"n":3}' },
        ]);
    } finally {
      await client.close();
    }
    const held = await SessionMirror.read(store);
    expect(held?.entries).toEqual([{ n: 0 }, { n: 1 }]);
    expect(held?.key).toBeUndefined();
  });
});

// Runs without a server, and keeps this file from being all-skipped so that Jest lists the
// skipped suite above with its reason.
describe('MirrorAheadError', () => {
  it('says how many entries the database and the directory hold, and why they differ', () => {
    expect(new MirrorAheadError(7, 5).message).toBe(
      'the database holds 7 journal entries and the directory 5: the session was resumed elsewhere since',
    );
  });
});
