/**
 * Where a MongoDB session's client listens, for agents whose client moved (docs/state-store.md,
 * "Session resume"): the field `addresses` (PublishedAddresses) of the session's document in
 * `sessions` ({_id: <session uid>}). The other fields of that document belong to other parts
 * of pilotfish, so this module only ever `$set`s its own field (upserting the document), and
 * never replaces the document.
 */
import type { Db, MongoClient } from 'mongodb';
import type { PublishedAddresses } from '../../generated';
import { parsePublishedAddresses } from '../../lib/validate';
import { StoreError } from '../state-store';
import { connectError } from './plan';
import { clientFor, parseMongoUri, type MongoTarget } from './uri';

/** The collection of one document per session. */
export const SESSIONS = 'sessions';

interface SessionDoc {
  _id: string;
  addresses?: unknown;
}

/**
 * The addresses `session` published last, checked against their schema (a document is read
 * back at a boundary), or undefined where none were (epoch 0: the bootstrap files' own).
 */
export async function readAddresses(
  db: Db,
  session: string,
): Promise<PublishedAddresses | undefined> {
  const doc = await db
    .collection<SessionDoc>(SESSIONS)
    .findOne({ _id: session }, { projection: { _id: 0, addresses: 1 } });
  if (doc?.addresses === undefined) return undefined;
  try {
    return parsePublishedAddresses(doc.addresses);
  } catch (e) {
    throw new StoreError(
      `the addresses of session ${session} in ${db.databaseName}.${SESSIONS} are not valid: ${(e as Error).message}`,
      { cause: e },
    );
  }
}

/**
 * Publishes `addresses` for `session`, only over a lower epoch (or none): two clients that
 * both resumed the session cannot both move its agents. The one that finds its epoch taken gets
 * a StoreError saying so. The update's filter fails on the higher epoch, and the upsert then
 * tries to insert a second document with the same _id, which the server refuses (E11000).
 */
export async function publishAddresses(
  db: Db,
  session: string,
  addresses: PublishedAddresses,
): Promise<void> {
  try {
    await db.collection<SessionDoc>(SESSIONS).updateOne(
      {
        _id: session,
        $or: [{ addresses: { $exists: false } }, { 'addresses.epoch': { $lt: addresses.epoch } }],
      },
      { $set: { addresses } },
      { upsert: true },
    );
  } catch (e) {
    if ((e as { code?: unknown } | null)?.code !== 11000) throw e; // a duplicate key
    throw new StoreError(
      `session ${session}: epoch ${addresses.epoch} of its addresses, or a later one, is published already: another client resumed it meanwhile`,
      { cause: e },
    );
  }
}

/**
 * A connection to a session's database for its addresses alone: what a resumed client opens
 * to read and publish them, and what an agent opens once it hears no client. The session's
 * MongoStore keeps its driver client to itself.
 */
export class AddressBoard {
  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    /** Where it is, without credentials (for errors and logs). */
    readonly target: Omit<MongoTarget, 'uri'>,
    private readonly waitedMs: number | undefined,
  ) {}

  /**
   * Connects to `uri` (database `db`). No server answering within the server-selection timeout
   * (10 s unless the URI says): a StoreUnreachableError naming the hosts; another failure: a
   * StoreError naming them. The URI (it may hold a password) is in neither.
   */
  static async connect(uri: string, db: string): Promise<AddressBoard> {
    const parsed = parseMongoUri(uri);
    const { uri: _uri, ...target } = parsed;
    const since = Date.now();
    const { client, waitedMs } = clientFor(parsed);
    try {
      await client.connect();
    } catch (e) {
      await client.close().catch(() => undefined);
      throw connectError(e, target.hosts, since, waitedMs, 'failed');
    }
    return new AddressBoard(client, client.db(db), target, waitedMs);
  }

  read(session: string): Promise<PublishedAddresses | undefined> {
    return this.call(() => readAddresses(this.db, session), 'failed to read addresses');
  }

  publish(session: string, addresses: PublishedAddresses): Promise<void> {
    return this.call(
      () => publishAddresses(this.db, session, addresses),
      'failed to publish addresses',
    );
  }

  close(): Promise<void> {
    return this.client.close();
  }

  /** Errors name the hosts and say whether a server answered (connectError), never the URI. */
  private async call<T>(fn: () => Promise<T>, doing: string): Promise<T> {
    const since = Date.now();
    try {
      return await fn();
    } catch (e) {
      if (e instanceof StoreError) throw e;
      throw connectError(e, this.target.hosts, since, this.waitedMs, doing);
    }
  }
}
