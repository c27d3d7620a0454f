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
import {
  MongoBulkWriteError,
  MongoClient,
  type ChangeStream,
  type Collection,
  type Db,
  type WriteError,
} from 'mongodb';
import type { Notification } from '../../generated';
import { coerceError, errorMeta, UsageError } from '../../errors';
import { deferred, type Deferred } from '../../lib/deferred';
import { silentLogger, type Logger } from '../../lib/logger';
import { parseNotification } from '../../lib/validate';
import {
  backoffMs,
  classifyWriteErrors,
  contiguousRun,
  fromDoc,
  isReplicaSet,
  KEY_INDEX,
  KEY_PARTIAL_FILTER,
  SEQ_INDEX,
  toDoc,
  uniqueByKey,
  type GapDoc,
  type SlotDoc,
  type WriteErrorLike,
} from './plan';
import { StoreError, type StateStore, type WatchBulk } from '../state-store';

export interface MongoStoreOptions {
  /** Database name (default 'pilotfish'). */
  db?: string;
  logger?: Logger;
  /** Poll period without a replica set, and the safety poll with one (default 200 ms). */
  pollMs?: number;
  /** How long a slot may stay missing, with later ones present, before a watch fills it. */
  gapGraceMs?: number;
  /** Most documents one watch read takes (default 1000). */
  readLimit?: number;
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

  private constructor(
    private readonly client: MongoClient,
    db: Db,
    readonly session: string,
    readonly replicaSet: boolean,
    readonly log: Logger,
    readonly opts: Required<Omit<MongoStoreOptions, 'db' | 'logger'>>,
  ) {
    this.notes = db.collection<SlotDoc>('notifications');
    this.counters = db.collection<CounterDoc>('counters');
  }

  static async open(
    uri: string,
    session: string,
    opts: MongoStoreOptions = {},
  ): Promise<MongoStore> {
    if (session === '') throw new UsageError('MongoStore.open: session must not be empty');
    const log = (opts.logger ?? silentLogger).child({ component: 'mongodb-store', session });
    const client = new MongoClient(uri);
    try {
      await client.connect();
      const db = client.db(opts.db ?? 'pilotfish');
      await db.collection('notifications').createIndexes([
        {
          key: { session: 1, kind: 1, uid: 1, attempt: 1, state: 1 },
          name: KEY_INDEX,
          unique: true,
          partialFilterExpression: KEY_PARTIAL_FILTER,
        },
        { key: { session: 1, seq: 1 }, name: SEQ_INDEX, unique: true },
      ]);
      const hello = await db.admin().command({ hello: 1 });
      const replicaSet = isReplicaSet(hello);
      log.info('mongodb store open', { replicaSet, db: db.databaseName });
      return new MongoStore(client, db, session, replicaSet, log, {
        pollMs: opts.pollMs ?? 200,
        gapGraceMs: opts.gapGraceMs ?? 5_000,
        readLimit: opts.readLimit ?? 1_000,
      });
    } catch (e) {
      await client.close();
      throw e;
    }
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

  watch(fromCursor = 0): AsyncIterableIterator<WatchBulk> {
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
    const docs = await this.notes.find(filter).sort({ seq: 1 }).toArray();
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
    return this.notes
      .find({ session: this.session, seq: { $gte: from } })
      .sort({ seq: 1 })
      .limit(this.opts.readLimit)
      .toArray();
  }

  /** Fills slots that hold no notification; a slot already filled is fine. */
  async fillGaps(seqs: number[]): Promise<void> {
    if (seqs.length === 0) return;
    const gaps: GapDoc[] = seqs.map((seq) => ({ session: this.session, seq, gap: true }));
    try {
      await this.notes.insertMany(gaps, { ordered: false });
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
        await this.notes.insertMany(docs, { ordered: false });
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
    const doc = await this.counters.findOneAndUpdate(
      { _id: this.session },
      { $inc: { seq: count } },
      { upsert: true, returnDocument: 'after' },
    );
    if (doc === null) throw new StoreError('mongodb counter upsert returned no document');
    return doc.seq - count + 1;
  }
}

/** The write errors of a bulk insert failure, or undefined for any other error. */
function writeErrorsOf(e: unknown): WriteErrorLike[] | undefined {
  if (!(e instanceof MongoBulkWriteError)) return undefined;
  const list = ([] as WriteError[]).concat(e.writeErrors);
  return list.map((w) => ({
    index: w.index,
    code: w.code,
    errmsg: w.errmsg,
    keyPattern: (w.err as { keyPattern?: Record<string, unknown> }).keyPattern,
  }));
}

const DONE: IteratorResult<WatchBulk> = { done: true, value: undefined };

/** One watch: a hand-written iterator, so return() ends it even while it waits. */
class MongoWatch implements AsyncIterableIterator<WatchBulk> {
  private position = 0;
  private nextSeq = 1;
  private ended = false;
  private dirty = false;
  private failures = 0;
  private hole: { seq: number; since: number } | undefined;
  private waiter: Deferred<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stream: ChangeStream | undefined;
  private current: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: MongoStore,
    private readonly fromCursor: number,
    private readonly onEnd: () => void,
  ) {
    if (store.isClosing) {
      this.ended = true;
      return;
    }
    try {
      this.stream = store.changes();
    } catch (e) {
      store.log.warn('change stream unavailable, polling', errorMeta(e));
    }
    this.stream?.on('change', () => this.wake());
    this.stream?.on('error', (e: unknown) => {
      store.log.warn('change stream failed, polling', errorMeta(e));
      this.closeStream();
    });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<WatchBulk> {
    return this;
  }

  /** Resolves once the next() in progress (if any) has settled. */
  settled(): Promise<unknown> {
    return this.current.catch(() => undefined);
  }

  next(): Promise<IteratorResult<WatchBulk>> {
    const p = this.current.then(
      () => this.step(),
      () => this.step(),
    );
    this.current = p;
    return p;
  }

  return(): Promise<IteratorResult<WatchBulk>> {
    this.finish();
    return Promise.resolve(DONE);
  }

  wake(): void {
    this.dirty = true;
    this.waiter?.resolve();
  }

  private async step(): Promise<IteratorResult<WatchBulk>> {
    while (!this.ended) {
      const finalPass = this.store.isClosing;
      let read: { bulk: WatchBulk | undefined; progressed: boolean };
      try {
        read = await this.readOnce();
        this.failures = 0;
      } catch (e) {
        if (this.ended || finalPass) break;
        const ms = backoffMs(this.failures++);
        this.store.log.warn('watch read failed, retrying', { ...errorMeta(e), retryInMs: ms });
        await this.sleep(ms);
        continue;
      }
      if (this.ended) break;
      if (read.bulk !== undefined) return { done: false, value: read.bulk };
      if (read.progressed) continue;
      if (finalPass) break;
      await this.sleep(this.store.opts.pollMs);
    }
    this.finish();
    return DONE;
  }

  private async readOnce(): Promise<{ bulk: WatchBulk | undefined; progressed: boolean }> {
    this.dirty = false;
    const docs = await this.store.readFrom(this.nextSeq);
    const run = contiguousRun(this.nextSeq, docs);
    const progressed = run.nextSeq > this.nextSeq;
    if (run.hole !== undefined && !progressed) await this.handleHole(run.hole);
    else this.hole = undefined;
    const valid = this.store.readBack(run.notifications);
    this.nextSeq = run.nextSeq;
    const start = this.position;
    this.position += valid.length;
    const skip = Math.max(0, this.fromCursor - start);
    const notifications = valid.slice(skip);
    if (notifications.length === 0) {
      return { bulk: undefined, progressed: progressed || this.dirty };
    }
    return { bulk: { cursor: start + skip, notifications }, progressed };
  }

  /** A slot missing while later ones exist: after gapGraceMs its writer is presumed dead. */
  private async handleHole(seq: number): Promise<void> {
    const now = Date.now();
    if (this.hole?.seq !== seq) {
      this.hole = { seq, since: now };
      return;
    }
    if (now - this.hole.since < this.store.opts.gapGraceMs) return;
    this.store.log.warn('filling an abandoned seq slot', { seq });
    await this.store.fillGaps([seq]);
    this.hole = undefined;
    this.dirty = true; // read again at once
  }

  private async sleep(ms: number): Promise<void> {
    if (this.dirty || this.ended || this.store.isClosing) return;
    const d = deferred<void>();
    this.waiter = d;
    this.timer = setTimeout(() => d.resolve(), ms);
    try {
      await d.promise;
    } finally {
      clearTimeout(this.timer);
      this.waiter = undefined;
    }
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.waiter?.resolve();
    this.closeStream();
    this.onEnd();
  }

  private closeStream(): void {
    const s = this.stream;
    this.stream = undefined;
    if (s === undefined) return;
    s.removeAllListeners('change');
    s.close().catch((e: unknown) =>
      this.store.log.debug('change stream close failed', errorMeta(coerceError(e))),
    );
  }
}
