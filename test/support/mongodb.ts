import { readdirSync } from 'node:fs';
import * as path from 'node:path';
import { MongoClient } from 'mongodb';
import { ConnectionString } from 'mongodb-connection-string-url';
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
      await removeDocs(client, choice.db, path.basename(dir));
    }
  } finally {
    await client.close();
  }
}

/** Removes one session's documents from database `db` (a test that opened a MongoStore). */
export async function removeMongoSession(uri: string, db: string, session: string): Promise<void> {
  const client = new MongoClient(uri);
  try {
    await removeDocs(client, db, session);
  } finally {
    await client.close();
  }
}

async function removeDocs(client: MongoClient, db: string, session: string): Promise<void> {
  await client.db(db).collection('notifications').deleteMany({ session });
  await client.db(db).collection<{ _id: string }>('counters').deleteOne({ _id: session });
  // what the session's mirror keeps for a resume
  await client.db(db).collection('journals').deleteMany({ session });
  await client.db(db).collection<{ _id: string }>('sessions').deleteOne({ _id: session });
}

/**
 * How many documents of `session` in database `db` hold each notification key
 * (`kind uid attempt state`); gap markers are not notifications and are left out.
 */
export async function storedKeys(
  uri: string,
  db: string,
  session: string,
): Promise<Map<string, number>> {
  const client = new MongoClient(uri);
  try {
    const docs = await client
      .db(db)
      .collection('notifications')
      .find({ session, uid: { $exists: true } })
      .project<{ kind: string; uid: string; attempt: number; state: string }>({
        _id: 0,
        kind: 1,
        uid: 1,
        attempt: 1,
        state: 1,
      })
      .toArray();
    const counts = new Map<string, number>();
    for (const d of docs) {
      const key = `${d.kind} ${d.uid} ${d.attempt} ${d.state}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return counts;
  } finally {
    await client.close();
  }
}

/** The URI options a TCP proxy in front of the server rules out, lower-cased. */
const NOT_THROUGH_A_PROXY: Record<string, string> = {
  tls: 'uses TLS',
  ssl: 'uses TLS',
  loadbalanced: 'is load balanced',
};

/**
 * Why the server of `uri` cannot be reached through one plain TCP proxy (TcpProxy), or
 * undefined when it can: one host, no SRV record, no TLS, not load balanced. Never names the
 * URI (it may hold a password).
 */
export function unproxiable(uri: string): string | undefined {
  let cs: ConnectionString;
  try {
    cs = new ConnectionString(uri);
  } catch {
    return 'it is not a MongoDB URI this test can read';
  }
  if (cs.isSRV) return 'it is a mongodb+srv URI (the proxy stands in front of one server)';
  if (cs.hosts.length !== 1) {
    return `it names ${cs.hosts.length} servers (the proxy stands in front of one)`;
  }
  for (const [k, v] of cs.searchParams) {
    const why = NOT_THROUGH_A_PROXY[k.toLowerCase()];
    if (why !== undefined && v.toLowerCase() === 'true') {
      return `it ${why} (the proxy reads plain TCP)`;
    }
  }
  return undefined;
}

/** The one server `uri` names (see unproxiable): its host and port (27017 by default). */
export function serverOf(uri: string): { host: string; port: number } {
  const [hostPort] = new ConnectionString(uri).hosts;
  const m = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(hostPort ?? '');
  if (m === null) throw new Error('the MongoDB URI names no host:port this test can read');
  return { host: m[1] ?? m[2]!, port: m[3] !== undefined ? Number(m[3]) : 27017 };
}

/**
 * `uri` with its server replaced by `address` (a proxy's host:port), connected directly (the
 * driver would otherwise go to the replica set members the server names, round the proxy),
 * uncompressed (the proxy reads the commands), and giving up on a server after `selectionMs`
 * (an outage is noticed at once). Credentials, database and the other options are kept.
 */
export function proxiedUri(uri: string, address: string, selectionMs = 2_000): string {
  const cs = new ConnectionString(uri);
  cs.hosts = [address];
  const drop = ['directconnection', 'serverselectiontimeoutms', 'compressors'];
  for (const k of [...cs.searchParams.keys()]) {
    if (drop.includes(k.toLowerCase())) cs.searchParams.delete(k);
  }
  cs.searchParams.set('directConnection', 'true');
  cs.searchParams.set('serverSelectionTimeoutMS', String(selectionMs));
  return cs.toString();
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
