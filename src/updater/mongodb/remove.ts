/**
 * Removing a session's documents from its MongoDB database (`pilotfish clean`), or counting
 * them first (`clean --dry-run`): its notifications and gap markers in `notifications`
 * ({session}), its counter in `counters` ({_id: session}), and what its mirror keeps for a
 * resume (`journals` {session}, `sessions` {_id: session}); store.ts and mirror.ts say more.
 */
import type { MongoClient } from 'mongodb';
import { connectError } from './plan';
import { clientFor, parseMongoUri, type MongoTarget } from './uri';

/** How many documents of a session there are (or were removed). */
export interface SessionDocumentCount {
  /** In `notifications`: notifications and gap markers. */
  notifications: number;
  /** In `counters`: 1, or 0 for a session that never wrote. */
  counters: number;
  /** Its mirror (mirror.ts): journal parts in `journals` and its document in `sessions`. */
  mirror: number;
}

export interface SessionDocumentsOptions {
  /** How long to wait for a server, unless the URI sets serverSelectionTimeoutMS (10 s). */
  serverSelectionTimeoutMs?: number;
}

/**
 * One connection to a MongoDB server for the sessions whose store it is: `clean` makes one per
 * URI, so that sessions sharing an unreachable server wait for it once.
 */
export class MongoSessionDocuments {
  private constructor(
    private readonly client: MongoClient,
    /** Where it is, without credentials. */
    readonly target: Omit<MongoTarget, 'uri'>,
  ) {}

  /**
   * Connects. No server answering within the server-selection timeout: a StoreUnreachableError
   * naming the hosts and the driver's reason; any other failure: a StoreError naming the hosts.
   * Neither holds the URI (it may hold a password).
   */
  static async connect(
    uri: string,
    opts: SessionDocumentsOptions = {},
  ): Promise<MongoSessionDocuments> {
    const parsed = parseMongoUri(uri);
    const { uri: _uri, ...target } = parsed;
    const since = Date.now();
    const { client, waitedMs } = clientFor(parsed, opts.serverSelectionTimeoutMs);
    try {
      await client.connect();
    } catch (e) {
      await client.close().catch(() => undefined);
      throw connectError(e, target.hosts, since, waitedMs, 'failed');
    }
    return new MongoSessionDocuments(client, target);
  }

  /** How many documents `remove(db, session)` would remove now. */
  async count(db: string, session: string): Promise<SessionDocumentCount> {
    const since = Date.now();
    try {
      const d = this.client.db(db);
      const [notifications, counters, parts, docs] = await Promise.all([
        d.collection('notifications').countDocuments({ session }),
        d.collection<{ _id: string }>('counters').countDocuments({ _id: session }),
        d.collection('journals').countDocuments({ session }),
        d.collection<{ _id: string }>('sessions').countDocuments({ _id: session }),
      ]);
      return { notifications, counters, mirror: parts + docs };
    } catch (e) {
      throw connectError(e, this.target.hosts, since, undefined, 'failed');
    }
  }

  /**
   * Removes the session's documents: its mirror first (a removal cut short leaves
   * notifications, which the directory still explains), its counter last, so that a removal
   * cut short leaves a counter whose session still has documents, never the reverse (a later
   * append would then reuse seqs from 1 beside documents that are still there).
   */
  async remove(db: string, session: string): Promise<SessionDocumentCount> {
    const since = Date.now();
    try {
      const d = this.client.db(db);
      const parts = await d.collection('journals').deleteMany({ session });
      const doc = await d.collection<{ _id: string }>('sessions').deleteOne({ _id: session });
      const notes = await d.collection('notifications').deleteMany({ session });
      const counter = await d.collection<{ _id: string }>('counters').deleteOne({ _id: session });
      return {
        notifications: notes.deletedCount,
        counters: counter.deletedCount,
        mirror: parts.deletedCount + doc.deletedCount,
      };
    } catch (e) {
      throw connectError(e, this.target.hosts, since, undefined, 'failed');
    }
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

/** Removes one session's documents from `db` at `uri` (connects, removes, disconnects). */
export async function removeSessionDocuments(
  uri: string,
  db: string,
  session: string,
  opts: SessionDocumentsOptions = {},
): Promise<SessionDocumentCount> {
  const docs = await MongoSessionDocuments.connect(uri, opts);
  try {
    return await docs.remove(db, session);
  } finally {
    await docs.close();
  }
}
