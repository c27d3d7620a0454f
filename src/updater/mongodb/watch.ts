/**
 * A watch of the MongoDB backend (src/updater/mongodb/store.ts, whose comment has the design):
 * reads a session's slots in seq order, delivering the run without a missing slot, woken by a
 * change stream on a replica set and by polling otherwise.
 */
import type { ChangeStream } from 'mongodb';
import { coerceError, errorMeta } from '../../errors';
import { deferred, type Deferred } from '../../lib/deferred';
import type { Logger } from '../../lib/logger';
import type { Notification } from '../../generated';
import type { WatchBulk } from '../state-store';
import { backoffMs, contiguousRun, type SlotDoc } from './plan';

const DONE: IteratorResult<WatchBulk> = { done: true, value: undefined };

/**
 * What a watch reads of its store (a MongoStore, which makes its watches): the session's slots
 * from a seq on, their notifications, the filling of an abandoned slot and the change stream.
 */
export interface WatchedStore {
  readonly isClosing: boolean;
  readonly log: Logger;
  readonly opts: { readonly pollMs: number; readonly gapGraceMs: number };
  changes(): ChangeStream | undefined;
  readFrom(from: number): Promise<SlotDoc[]>;
  readBack(docs: readonly SlotDoc[]): Notification[];
  fillGaps(seqs: number[]): Promise<void>;
}

/**
 * One watch: a hand-written iterator, so return() ends it even while it waits. `through` is
 * the last seq slot it has read past (its reader has every notification up to it once the
 * bulk it was given is handled); `onProgress` hears it move when no bulk comes of it (slots
 * that held gap markers).
 */
export class MongoWatch implements AsyncIterableIterator<WatchBulk> {
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
  private progressListener: (() => void) | undefined;

  constructor(
    private readonly store: WatchedStore,
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

  get through(): number {
    return this.nextSeq - 1;
  }

  onProgress(listener: () => void): void {
    this.progressListener = listener;
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
      if (read.progressed) {
        this.progressListener?.();
        continue;
      }
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
