import { readdirSync } from 'node:fs';
import * as path from 'node:path';
import { MongoClient } from 'mongodb';
import { readStoreChoice } from '../../src/updater/store-choice';

/**
 * Removes from MongoDB the documents of every session under `root` whose store is there (a
 * test that ran sessions on PILOTFISH_MONGODB_URI cleans up after itself).
 */
export async function removeMongoSessions(uri: string, root: string): Promise<void> {
  const client = new MongoClient(uri);
  try {
    for (const dir of sessionDirs(root)) {
      const choice = readStoreChoice(dir);
      if (choice.kind !== 'mongodb') continue;
      const db = client.db(choice.db);
      const session = path.basename(dir);
      await db.collection('notifications').deleteMany({ session });
      await db.collection<{ _id: string }>('counters').deleteOne({ _id: session });
    }
  } finally {
    await client.close();
  }
}

/** Session directories below `root`, at any depth up to 3 (they hold a journal.jsonl). */
function sessionDirs(root: string, depth = 3): string[] {
  let entries;
  try {
    entries = readdirSync(root, { withFileTypes: true });
  } catch {
    return [];
  }
  if (entries.some((e) => e.name === 'journal.jsonl')) return [root];
  if (depth === 0) return [];
  return entries
    .filter((e) => e.isDirectory())
    .flatMap((e) => sessionDirs(path.join(root, e.name), depth - 1));
}
