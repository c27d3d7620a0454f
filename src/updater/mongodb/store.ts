/**
 * MongoDB backend of the StateStore (docs/state-store.md), official driver.
 *
 * Layout: one collection `notifications` shared by sessions. A document is a notification plus
 * `session` and `seq`, or a gap marker `{session, seq, gap: true}`. Two unique indexes:
 * (session, kind, uid, attempt, state) on notifications only (idempotence) and (session, seq) on
 * every document (one document per slot). `counters` holds `{_id: session, seq}`.
 *
 * append: drop repeated keys in the batch, reserve a seq range with one findOneAndUpdate $inc of
 * the batch size, then insertMany(ordered: false). A duplicate-key error on the key index is
 * "already there": it counts zero and its slot is filled at once with a gap marker. A
 * duplicate-key error on the seq index means a watcher declared the slot abandoned: that
 * notification is retried with a fresh slot.
 *
 * Cursor: the interface's cursor is a dense position (notifications before), not the seq. A
 * watch keeps (position, nextSeq) and reads `seq >= nextSeq` in seq order, delivering only the
 * run without a missing slot. A missing slot is a write in flight: reading past it could put a
 * later seq before an earlier one and then shift positions. Slots never stay missing: a
 * duplicate's slot is filled by its writer; a slot whose writer died (reserved, never inserted)
 * is filled by any watch that has seen it missing, with later slots present, for gapGraceMs.
 * The unique seq index makes that claim safe against a late writer (it gets the seq error and
 * retries with a new slot). So every reader sees the same sequence, and resuming at a position
 * is exact: no gap, no repeat.
 *
 * Wake-ups: on a replica set (`hello` has `setName`) a change stream filtered on the session
 * wakes the watch; reads are still by seq, so the stream needs no resume token and a missed
 * event costs at most one poll period. Without a replica set, polling every pollMs. A failed
 * read is retried with exponential backoff (to 5 s); nothing advances before delivery, so a
 * retry re-reads from the last delivered slot.
 */
import type { MongoClient } from 'mongodb';
import { type ChangeStream, type Collection, type Db } from 'mongodb';
import type { Notification } from '../../generated';
import { coerceError, errorMeta, UsageError } from '../../errors';
import { silentLogger, type Logger } from '../../lib/logger';
import { parseNotification } from '../../lib/validate';
import {
  classifyWriteErrors,
  fromDoc,
  isReplicaSet,
  connectError,
  isUnreachableError,
  KEY_INDEX,
  writeErrorsOf,
  KEY_PARTIAL_FILTER,
  SEQ_INDEX,
  toDoc,
  uniqueByKey,
  type GapDoc,
  type SlotDoc,
  type WriteErrorLike,
} from './plan';
import { StoreError, StoreUnreachableError, type StateStore } from '../state-store';
import { clientFor, parseMongoUri, type MongoTarget } from './uri';
import { MongoWatch } from './watch';

export interface MongoStoreOptions {
  /** Database name (default: the URI's path, else 'pilotfish'). */
  db?: string;
  /**
   * How long open, and each call later, waits for a server to answer, unless the URI sets
   * serverSelectionTimeoutMS (default 10 s).
   */
  serverSelectionTimeoutMs?: number;
  logger?: Logger;
  /** Poll period without a replica set, and the safety poll with one (default 200 ms). */
  pollMs?: number;
  /** How long a slot may stay missing, with later ones present, before a watch fills it. */
  gapGraceMs?: number;
  /** Most documents one watch read takes (default 1000). */
  readLimit?: number;
  /** Only reads (profile, timeline, tail): no index is made, so a read-only user will do. */
  readOnly?: boolean;
}

interface CounterDoc {
  _id: string;
  seq: number;
}

export class MongoStore implements StateStore {
  private readonly notes: Collection<SlotDoc>;
  private readonly counters: Collection<CounterDoc>;
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly watches = new Set<MongoWatch>();
  private closing: Promise<void> | undefined;
  /** While no server answers: the condition (see onUnreachable). */
  private lost: StoreUnreachableError | undefined;
  private readonly unreachableListeners = new Set<(e: StoreUnreachableError | undefined) => void>();

  private constructor(
    private readonly client: MongoClient,
    /** The session's database (its mirror, mirror.ts, keeps documents there too). */
    readonly db: Db,
    readonly session: string,
    readonly replicaSet: boolean,
    readonly log: Logger,
    readonly opts: Required<
      Omit<MongoStoreOptions, 'db' | 'logger' | 'serverSelectionTimeoutMs' | 'readOnly'>
    >,
    /** Where it is, without credentials: hosts and database. */
    readonly target: Omit<MongoTarget, 'uri'>,
  ) {
    this.notes = db.collection<SlotDoc>('notifications');
    this.counters = db.collection<CounterDoc>('counters');
  }

  /**
   * Connects and makes sure of the indexes. No server answering within the server-selection
   * timeout: a StoreUnreachableError naming the hosts and the driver's reason; a server that
   * answers with an error (authentication, rights): a StoreError naming the hosts. The URI
   * (it may hold a password) is in neither, nor in any log line.
   */
  static async open(
    uri: string,
    session: string,
    opts: MongoStoreOptions = {},
  ): Promise<MongoStore> {
    if (session === '') throw new UsageError('MongoStore.open: session must not be empty');
    const parsed = parseMongoUri(uri);
    const { uri: _uri, ...target } = parsed;
    const dbName = opts.db ?? target.db;
    const log = (opts.logger ?? silentLogger).child({ component: 'mongodb-store', session });
    const since = Date.now();
    const { client, waitedMs } = clientFor(parsed, opts.serverSelectionTimeoutMs);
    try {
      await client.connect();
      const db = client.db(dbName);
      if (opts.readOnly !== true) await createIndexes(db);
      const hello = await db.admin().command({ hello: 1 });
      const replicaSet = isReplicaSet(hello);
      log.info('mongodb store open', { replicaSet, db: db.databaseName, at: target.redacted });
      return new MongoStore(
        client,
        db,
        session,
        replicaSet,
        log,
        {
          pollMs: opts.pollMs ?? 200,
          gapGraceMs: opts.gapGraceMs ?? 5_000,
          readLimit: opts.readLimit ?? 1_000,
        },
        { ...target, db: dbName },
      );
    } catch (e) {
      await client.close().catch(() => undefined);
      throw connectError(e, target.hosts, since, waitedMs, "could not open the session's store");
    }
  }

  /** While no server answers its calls: the condition; undefined while they succeed. */
  get unreachable(): StoreUnreachableError | undefined {
    return this.lost;
  }

  /** Hears the store lose its servers (the error) and find them again (undefined). */
  onUnreachable(listener: (e: StoreUnreachableError | undefined) => void): () => void {
    this.unreachableListeners.add(listener);
    return () => this.unreachableListeners.delete(listener);
  }

  /**
   * Runs one call to the server, keeping `unreachable` up to date: a failure for want of a
   * server begins the condition, any success ends it.
   */
  async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      const out = await fn();
      this.reached();
      return out;
    } catch (e) {
      if (!isUnreachableError(e)) {
        this.reached();
      } // a server answered, with an error
      else if (this.lost === undefined && this.closing === undefined) {
        this.lost = new StoreUnreachableError(
          { hosts: this.target.hosts, reason: coerceError(e).message, since: Date.now() },
          { cause: e },
        );
        this.log.warn('mongodb unreachable', {
          at: this.target.redacted,
          reason: this.lost.reason,
        });
        this.tellUnreachable(this.lost);
      }
      throw e;
    }
  }

  private reached(): void {
    if (this.lost === undefined) return;
    this.lost = undefined;
    this.log.info('mongodb reachable again', { at: this.target.redacted });
    this.tellUnreachable(undefined);
  }

  private tellUnreachable(e: StoreUnreachableError | undefined): void {
    for (const l of this.unreachableListeners) {
      try {
        l(e);
      } catch (err) {
        this.log.error('store condition listener failed', errorMeta(err));
      }
    }
  }

  /**
   * A mark of what the store holds now: the highest seq slot written (0: none). Once a watch's
   * `through` reaches it, that watch has read everything accepted before this call; slots
   * below it that are missing are writes in flight, or abandoned ones a watch fills after
   * gapGraceMs, so it is reached. (The counter would also count slots reserved by a writer
   * that died before it wrote: with nothing written after them, no watch could pass them.)
   */
  async mark(): Promise<number> {
    const [doc] = await this.call(() =>
      this.notes
        .find({ session: this.session }, { projection: { seq: 1 } })
        .sort({ seq: -1 })
        .limit(1)
        .toArray(),
    );
    return doc?.seq ?? 0;
  }

  get isClosing(): boolean {
    return this.closing !== undefined;
  }

  append(batch: Notification[]): Promise<number> {
    if (this.closing !== undefined) {
      return Promise.reject(new UsageError('append on a closed store'));
    }
    const p = this.insert(uniqueByKey(batch));
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p)).catch(() => undefined);
    return p;
  }

  watch(fromCursor = 0): MongoWatch {
    if (!Number.isInteger(fromCursor) || fromCursor < 0) {
      throw new UsageError(`watch: fromCursor must be an integer >= 0, got ${fromCursor}`);
    }
    const w = new MongoWatch(this, fromCursor, () => this.watches.delete(w));
    if (this.closing === undefined) this.watches.add(w);
    return w;
  }

  async history(uid?: string): Promise<Notification[]> {
    const filter =
      uid === undefined
        ? { session: this.session, uid: { $exists: true } }
        : { session: this.session, uid };
    const docs = await this.call(() => this.notes.find(filter).sort({ seq: 1 }).toArray());
    return this.readBack(docs);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled([...this.inflight]);
      const watches = [...this.watches];
      for (const w of watches) w.wake();
      await Promise.allSettled(watches.map((w) => w.settled()));
      await this.client.close();
    })();
    return this.closing;
  }

  /**
   * Validates documents read back (a boundary). An invalid one is dropped and logged, by every
   * reader alike, so positions stay the same for watch and history.
   */
  readBack(docs: readonly SlotDoc[]): Notification[] {
    const out: Notification[] = [];
    for (const d of docs) {
      try {
        out.push(parseNotification(fromDoc(d as unknown as Record<string, unknown>)));
      } catch (e) {
        this.log.warn('invalid notification document dropped', { seq: d.seq, ...errorMeta(e) });
      }
    }
    return out;
  }

  /** Documents with seq >= from, in seq order (one watch read). */
  readFrom(from: number): Promise<SlotDoc[]> {
    return this.call(() =>
      this.notes
        .find({ session: this.session, seq: { $gte: from } })
        .sort({ seq: 1 })
        .limit(this.opts.readLimit)
        .toArray(),
    );
  }

  /** Fills slots that hold no notification; a slot already filled is fine. */
  async fillGaps(seqs: number[]): Promise<void> {
    if (seqs.length === 0) return;
    const gaps: GapDoc[] = seqs.map((seq) => ({ session: this.session, seq, gap: true }));
    try {
      await this.call(() => this.notes.insertMany(gaps, { ordered: false }));
    } catch (e) {
      const errors = writeErrorsOf(e);
      if (errors === undefined || errors.some((w) => w.code !== 11000)) throw e;
    }
  }

  /** A change stream on this session's inserts, or undefined without a replica set. */
  changes(): ChangeStream | undefined {
    if (!this.replicaSet) return undefined;
    return this.notes.watch([
      { $match: { operationType: 'insert', 'fullDocument.session': this.session } },
    ]);
  }

  private async insert(fresh: Notification[]): Promise<number> {
    let pending = fresh;
    let accepted = 0;
    while (pending.length > 0) {
      const first = await this.reserve(pending.length);
      const docs = pending.map((n, i) => toDoc(this.session, first + i, n));
      let errors: WriteErrorLike[] = [];
      try {
        await this.call(() => this.notes.insertMany(docs, { ordered: false }));
      } catch (e) {
        const found = writeErrorsOf(e);
        if (found === undefined) throw e;
        errors = found;
      }
      const classes = classifyWriteErrors(errors);
      if (classes.other.length > 0) {
        // Slots of failed inserts stay missing; a watch fills them after gapGraceMs.
        throw new StoreError(
          `mongodb insert failed: ${classes.other.map((o) => o.errmsg ?? `code ${o.code}`).join('; ')}`,
        );
      }
      accepted += docs.length - classes.duplicate.length - classes.slotTaken.length;
      await this.fillGaps(classes.duplicate.flatMap((i) => docs[i]?.seq ?? []));
      pending = classes.slotTaken.flatMap((i) => pending[i] ?? []);
    }
    return accepted;
  }

  /** Reserves `count` consecutive slots; returns the first. Seqs start at 1. */
  private async reserve(count: number): Promise<number> {
    const doc = await this.call(() =>
      this.counters.findOneAndUpdate(
        { _id: this.session },
        { $inc: { seq: count } },
        { upsert: true, returnDocument: 'after' },
      ),
    );
    if (doc === null) throw new StoreError('mongodb counter upsert returned no document');
    return doc.seq - count + 1;
  }
}

/**
 * The two unique indexes of notifications (see the file's comment) and the one of the
 * session's mirrored journal (mirror.ts); a no-op where they exist.
 */
async function createIndexes(db: Db): Promise<void> {
  await db.collection('notifications').createIndexes([
    {
      key: { session: 1, kind: 1, uid: 1, attempt: 1, state: 1 },
      name: KEY_INDEX,
      unique: true,
      partialFilterExpression: KEY_PARTIAL_FILTER,
    },
    { key: { session: 1, seq: 1 }, name: SEQ_INDEX, unique: true },
  ]);
  await db
    .collection('journals')
    .createIndex({ session: 1, n: 1, i: 1 }, { name: 'pf_journal_part_unique', unique: true });
}
