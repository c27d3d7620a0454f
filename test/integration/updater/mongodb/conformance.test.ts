import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { MongoClient } from 'mongodb';
import type { Notification } from '../../../../src/generated';
import { MongoStore } from '../../../../src/updater/mongodb/store';
import { describeStoreConformance } from '../conformance';
import { makeNotes } from '../helpers';

/**
 * Runs against a real server only (Debian has no MongoDB server to install, and a protocol
 * mock would not test anything). Set PILOTFISH_MONGODB_URI, e.g. mongodb://127.0.0.1:27017.
 */
const uri = process.env['PILOTFISH_MONGODB_URI'];
const DB = 'pilotfish_test';
const d = uri !== undefined && uri !== '' ? describe : describe.skip;
const title =
  uri !== undefined && uri !== ''
    ? 'MongoStore'
    : 'MongoStore (skipped: PILOTFISH_MONGODB_URI is not set; no MongoDB server can be installed here)';

async function removeSession(session: string): Promise<void> {
  const client = new MongoClient(uri!);
  try {
    const db = client.db(DB);
    await db.collection('notifications').deleteMany({ session });
    await db.collection<{ _id: string }>('counters').deleteOne({ _id: session });
  } finally {
    await client.close();
  }
}

d(title, () => {
  describeStoreConformance('MongoStore', async () => {
    const session = `test-${randomUUID()}`;
    const store = await MongoStore.open(uri!, session, { db: DB, pollMs: 20 });
    return { store, cleanup: () => removeSession(session) };
  });

  it('fills the slot of a writer that died between reserving and inserting', async () => {
    const session = `test-${randomUUID()}`;
    const store = await MongoStore.open(uri!, session, { db: DB, pollMs: 20, gapGraceMs: 200 });
    const client = new MongoClient(uri!);
    try {
      const notes = makeNotes(4);
      await store.append(notes.slice(0, 2));
      // A dead writer: it reserved slot 3 and never inserted.
      await client
        .db(DB)
        .collection<{ _id: string; seq: number }>('counters')
        .updateOne({ _id: session }, { $inc: { seq: 1 } });
      await store.append(notes.slice(2));
      const seen: Notification[] = [];
      for await (const bulk of store.watch(0)) {
        seen.push(...bulk.notifications);
        if (seen.length === 4) break;
      }
      expect(seen).toEqual(notes);
      expect(await store.history()).toEqual(notes);
    } finally {
      await client.close();
      await store.close();
      await removeSession(session);
    }
  });
});

// Runs without a server, and keeps this file from being all-skipped so that Jest lists the
// skipped suite above with its reason.
describe('MongoStore.open', () => {
  it('refuses an empty session id before connecting', async () => {
    await expect(MongoStore.open('mongodb://127.0.0.1:1', '')).rejects.toThrow(
      'session must not be empty',
    );
  });
});
