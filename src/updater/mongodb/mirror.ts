/**
 * What a MongoDB session keeps in its database besides its notifications, so that a client
 * without the session's directory (on another machine) can resume it: its journal, entry by
 * entry, in `journals` (mirror-plan.ts says how), and in `sessions`, one document
 * `{_id: session}` with its key pair (`key`) and its delivered-callback counters
 * (`delivered`). Other fields of that document belong to others: it is only ever `$set`.
 *
 * Entries are written in journal order, one writer per session, as idempotent upserts: a
 * batch cut by an outage is simply sent again. Nothing here waits for a server on the hot
 * path: entries are queued, and `settled()` says when all queued so far are written.
 */
import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import { coerceError } from '../../errors';
import { StoreError } from '../state-store';
import { entriesOf, partsOf, type JournalPartDoc } from './mirror-plan';
import { backoffMs, isUnreachableError } from './plan';
import type { MongoStore } from './store';

/** A session's key pair as the client keeps it (session.key). */
export interface MirroredKey {
  publicKey: string;
  secretKey: string;
}

/** What the database holds of a session besides its notifications. */
export interface MirroredSession {
  /** Absent for a session opened insecure (it has no key). */
  key: MirroredKey | undefined;
  /** The journal's entries, from the first up to the first one not wholly written. */
  entries: unknown[];
  /** Events each manager delivered, as last written (a write takes one round trip). */
  delivered: number[];
}

interface SessionDoc {
  _id: string;
  key?: MirroredKey;
  delivered?: number[];
}

/** The database holds more of the journal than the directory: it was resumed elsewhere. */
export class MirrorAheadError extends Error {
  constructor(
    readonly held: number,
    readonly local: number,
  ) {
    super(
      `the database holds ${held} journal entries and the directory ${local}: the session was resumed elsewhere since`,
    );
  }
}

/** Journal entries per bulk write. */
const ENTRIES_PER_WRITE = 64;

export class SessionMirror {
  private readonly journals: Collection<JournalPartDoc>;
  private readonly sessions: Collection<SessionDoc>;
  private readonly queue: { n: number; entry: unknown }[] = [];
  /** Entries numbered below it are written. */
  private through: number;
  private next: number;
  private readonly waiters: { n: number; resolve: () => void }[] = [];
  private writing = false;
  private stopped = false;
  private counts: readonly number[] | undefined;
  private countsWrite: Promise<void> | undefined;

  private constructor(
    private readonly store: MongoStore,
    /** Entries the journal holds already (0 for a new session). */
    start: number,
  ) {
    this.journals = store.db.collection<JournalPartDoc>('journals');
    this.sessions = store.db.collection<SessionDoc>('sessions');
    this.through = this.next = start;
  }

  /**
   * A new session's mirror: its key is written before anything else happens. Refused where the
   * database holds a journal of the same uid already (the entries would not be replaced).
   */
  static async create(store: MongoStore, key: MirroredKey | undefined): Promise<SessionMirror> {
    const m = new SessionMirror(store, 0);
    const session = store.session;
    if ((await store.call(() => m.journals.findOne({ session }))) !== null) {
      throw new StoreError(
        `database '${store.db.databaseName}' holds a journal of session ${session} already: a new session needs a uid of its own`,
      );
    }
    if (key !== undefined) await m.setKey(key);
    return m;
  }

  /**
   * A resumed session's mirror, given its journal as the directory holds it: the entries the
   * database lacks (a client that died before they were written) are queued again. Throws
   * when the database holds more entries than the directory: the session was resumed from the
   * database elsewhere since, and this directory is out of date.
   */
  static async resume(
    store: MongoStore,
    local: readonly unknown[],
    key: MirroredKey | undefined,
  ): Promise<SessionMirror> {
    const held = await SessionMirror.read(store);
    const have = held?.entries.length ?? 0;
    if (have > local.length) {
      throw new MirrorAheadError(have, local.length);
    }
    const m = new SessionMirror(store, have);
    if (key !== undefined && held?.key === undefined) await m.setKey(key);
    m.append(local.slice(have));
    return m;
  }

  /** What the database holds of `store`'s session; undefined when it holds nothing of it. */
  static async read(store: MongoStore): Promise<MirroredSession | undefined> {
    const session = store.session;
    const db = store.db;
    const doc = await store.call(() =>
      db.collection<SessionDoc>('sessions').findOne({ _id: session }),
    );
    const parts = await store.call(() =>
      db
        .collection<JournalPartDoc>('journals')
        .find({ session }, { projection: { _id: 0 } })
        .sort({ n: 1, i: 1 })
        .toArray(),
    );
    if (doc === null && parts.length === 0) return undefined;
    return {
      key: doc?.key,
      entries: entriesOf(parts),
      delivered: doc?.delivered ?? [],
    };
  }

  /** Queues entries the journal has just written, in its order. */
  append(entries: readonly unknown[]): void {
    for (const entry of entries) this.queue.push({ n: this.next++, entry });
    if (!this.writing && this.queue.length > 0) void this.write();
  }

  /** Resolves once every entry queued so far is written (waits through outages). */
  settled(): Promise<void> {
    if (this.through >= this.next) return Promise.resolve();
    const n = this.next - 1;
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  /** Entries queued and not written yet. */
  get behind(): number {
    return this.next - this.through;
  }

  /**
   * The managers' delivered counters changed: `counts` (live: read when written, so the
   * latest go; a hole counts 0) is written at once, or after the write in flight.
   */
  delivered(counts: readonly number[]): void {
    this.counts = counts;
    if (this.countsWrite === undefined && !this.stopped) this.countsWrite = this.writeCounts();
  }

  /**
   * Writes what is queued, waiting at most `waitMs`; then stops. Returns the entries still
   * unwritten (0 when all are in the database).
   */
  async close(waitMs: number): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const timeUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
    await Promise.race([Promise.all([this.settled(), this.countsWrite]), timeUp]);
    clearTimeout(timer);
    this.stopped = true;
    // nobody waits on a mirror that stopped: what it did not write is counted, not awaited
    for (const w of this.waiters.splice(0)) w.resolve();
    return this.behind;
  }

  private async setKey(key: MirroredKey): Promise<void> {
    const session = this.store.session;
    await this.store.call(() =>
      this.sessions.updateOne({ _id: session }, { $set: { key } }, { upsert: true }),
    );
  }

  /** Writes the latest counts until none changed since, through outages, until stopped. */
  private async writeCounts(): Promise<void> {
    const session = this.store.session;
    for (let failures = 0; this.counts !== undefined && !this.stopped;) {
      const live = this.counts;
      this.counts = undefined;
      const delivered = Array.from(live, (c) => c ?? 0);
      try {
        await this.store.call(() =>
          this.sessions.updateOne({ _id: session }, { $set: { delivered } }, { upsert: true }),
        );
        failures = 0;
      } catch (e) {
        this.counts ??= live;
        if (!isUnreachableError(e) && failures === 0) {
          this.store.log.error('delivered counters not mirrored, trying again', {
            reason: coerceError(e).message,
          });
        }
        await pause(backoffMs(failures++));
      }
    }
    this.countsWrite = undefined;
  }

  /** The one writer: takes queued entries in order until none is left or it is stopped. */
  private async write(): Promise<void> {
    this.writing = true;
    let failures = 0;
    while (this.queue.length > 0 && !this.stopped) {
      const batch = this.queue.slice(0, ENTRIES_PER_WRITE);
      const ops: AnyBulkWriteOperation<JournalPartDoc>[] = batch.flatMap(({ n, entry }) =>
        partsOf(this.store.session, n, entry).map((p) => ({
          updateOne: {
            filter: { session: p.session, n: p.n, i: p.i },
            update: { $setOnInsert: { of: p.of, text: p.text } },
            upsert: true,
          },
        })),
      );
      try {
        await this.store.call(() => this.journals.bulkWrite(ops, { ordered: true }));
      } catch (e) {
        // an outage is said by the store (onUnreachable); any other failure here
        if (!isUnreachableError(e) && failures === 0) {
          this.store.log.error('journal entries not mirrored, trying again', {
            reason: coerceError(e).message,
          });
        }
        await pause(backoffMs(failures++));
        continue;
      }
      failures = 0;
      this.queue.splice(0, batch.length);
      this.through = batch[batch.length - 1]!.n + 1;
      for (let i = this.waiters.length - 1; i >= 0; i--) {
        if (this.waiters[i]!.n < this.through) this.waiters.splice(i, 1)[0]!.resolve();
      }
    }
    this.writing = false;
  }
}

/** Waits, without holding a closing process open. */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
