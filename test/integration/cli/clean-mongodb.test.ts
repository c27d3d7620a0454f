import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { MongoClient } from 'mongodb';
import { MongoStore } from '../../../src/updater/mongodb/store';
import { runCli } from '../../support/cli';
import { tempDirs } from '../../support/temp-dirs';
import { makeNotes } from '../updater/helpers';

/** A session uid as Session.open makes them (clean only looks at directories so named). */
const sessionUid = (): string => `pf.20260101.000000.${randomBytes(3).toString('hex')}`;

/** An ended session's directory: a journal with its close mark, and store.json for MongoDB. */
function endedSession(parent: string, store?: { mongodb: string; db: string }): string {
  const uid = sessionUid();
  const dir = path.join(parent, uid);
  mkdirSync(dir, { mode: 0o700 });
  writeFileSync(path.join(dir, 'journal.jsonl'), JSON.stringify({ t: 'closed', at: 1 }) + '\n');
  if (store !== undefined) {
    writeFileSync(path.join(dir, 'store.json'), JSON.stringify(store) + '\n', { mode: 0o600 });
  }
  return uid;
}

interface CleanJson {
  dryRun: boolean;
  removed: { uid: string; mongodb?: { hosts: string[]; db: string; documents: number } }[];
  failed: { uid: string; error: string }[];
}

describe('pilotfish clean, a MongoDB session whose server cannot be reached', () => {
  const temp = tempDirs('pf-clean-mongo-');
  const unreachable = {
    mongodb: 'mongodb://u:secret@127.0.0.1:1/x?serverSelectionTimeoutMS=300',
    db: 'x',
  };

  it('keeps its directory, says why naming the host (never the password), removes the others, exits 1', async () => {
    const parent = temp.make();
    const mongo = endedSession(parent, unreachable);
    const embedded = endedSession(parent);
    const r = await runCli(['clean', '--dir', parent]);
    expect(r.code).toBe(1);
    expect(existsSync(path.join(parent, mongo, 'store.json'))).toBe(true);
    expect(existsSync(path.join(parent, embedded))).toBe(false);
    expect(r.stderr).toMatch(
      new RegExp(
        `^pilotfish: kept ${mongo}: its documents in MongoDB could not be removed: ` +
          'cannot reach MongoDB at 127\\.0\\.0\\.1:1: .+\\n$',
      ),
    );
    expect(r.stdout).toMatch(
      new RegExp(`^removed ${embedded} \\(ended, .*\\)\\nremoved 1 session`),
    );
    expect(r.stdout + r.stderr).not.toContain('secret');
  });

  it('--dry-run --json lists it as failed, as a real run would keep it, and exits 1', async () => {
    const parent = temp.make();
    const first = endedSession(parent, unreachable);
    const second = endedSession(parent, unreachable); // same server: one wait, both reported
    const r = await runCli(['clean', '--dry-run', '--json', '--dir', parent]);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as CleanJson;
    expect(out).toMatchObject({ dryRun: true, removed: [] });
    expect(out.failed.map((f) => f.uid).sort()).toEqual([first, second].sort());
    for (const f of out.failed) expect(f.error).toMatch(/cannot reach MongoDB at 127\.0\.0\.1:1: /);
    expect(existsSync(path.join(parent, first))).toBe(true);
    expect(r.stdout + r.stderr).not.toContain('secret');
  });

  it('keeps a session whose store.json is damaged, saying so', async () => {
    const parent = temp.make();
    const uid = endedSession(parent);
    writeFileSync(path.join(parent, uid, 'store.json'), '{"mongodb": 1}\n', { mode: 0o600 });
    const r = await runCli(['clean', '--dir', parent]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`pilotfish: kept ${uid}: its documents in MongoDB could not be`);
    expect(r.stderr).toContain('store.json: expected {"mongodb": "mongodb://…", "db": "…"}');
    expect(existsSync(path.join(parent, uid))).toBe(true);
  });
});

/**
 * Against a real server only (no MongoDB server can be installed here, and a stand-in would
 * test nothing): set PILOTFISH_MONGODB_URI, e.g. mongodb://127.0.0.1:27017.
 */
const uri = process.env['PILOTFISH_MONGODB_URI'];
const DB = 'pilotfish_test';
const withServer = uri !== undefined && uri !== '';
const d = withServer ? describe : describe.skip;
const title = withServer
  ? 'pilotfish clean, a MongoDB session'
  : 'pilotfish clean, a MongoDB session (skipped: PILOTFISH_MONGODB_URI is not set; no MongoDB server can be installed here)';

/** Writes `count` notifications for `session` through the store, as its UpdateWorkers would. */
async function writeSession(session: string, count: number): Promise<void> {
  const store = await MongoStore.open(uri!, session, { db: DB });
  try {
    expect(await store.append(makeNotes(count))).toBe(count);
  } finally {
    await store.close();
  }
}

d(title, () => {
  const temp = tempDirs('pf-clean-mongo-');

  it("removes its documents (--dry-run counts them first) and leaves another session's", async () => {
    const parent = temp.make();
    const uid = endedSession(parent, { mongodb: uri!, db: DB });
    const other = sessionUid(); // another session's documents, in the same database
    const client = new MongoClient(uri!);
    const db = client.db(DB);
    const notes = db.collection('notifications');
    const counters = db.collection<{ _id: string }>('counters');
    const count = async (session: string): Promise<[number, number]> => [
      await notes.countDocuments({ session }),
      await counters.countDocuments({ _id: session }),
    ];
    try {
      await writeSession(uid, 12);
      await writeSession(other, 5);
      expect(await count(uid)).toEqual([12, 1]);

      const dry = await runCli(['clean', '--dry-run', '--json', '--dir', parent]);
      expect(dry.code).toBe(0);
      expect(JSON.parse(dry.stdout)).toMatchObject({
        dryRun: true,
        removed: [{ uid, mongodb: { db: DB, documents: 13 } }],
        failed: [],
      });
      expect(await count(uid)).toEqual([12, 1]);

      const r = await runCli(['clean', '--dir', parent]);
      expect([r.code, r.stderr]).toEqual([0, '']);
      expect(r.stdout).toMatch(
        new RegExp(`^removed ${uid} \\(ended, .*, 13 documents in MongoDB at .+/${DB}\\)\\n`),
      );
      expect(existsSync(path.join(parent, uid))).toBe(false);
      expect(await count(uid)).toEqual([0, 0]);
      expect(await count(other)).toEqual([5, 1]);
    } finally {
      await notes.deleteMany({ session: { $in: [uid, other] } });
      await counters.deleteMany({ _id: { $in: [uid, other] } });
      await client.close();
    }
  }, 30_000);
});
