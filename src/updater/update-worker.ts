import { randomBytes } from 'node:crypto';
import type { Notification, StoreReply, StoreRequest } from '../generated';
import { coerceError, errorMeta, UsageError, ValidationError } from '../errors';
import { deferred, withTimeout, type Deferred } from '../lib/deferred';
import type { Logger } from '../lib/logger';
import { parseNotificationBulk } from '../lib/validate';
import { QueueReceiver } from '../transport/queue';
import { BadMessages } from '../lib/bad-messages';
import { SpillQueue } from './spill-queue';
import type { UpdateWorkerOptions, UpdateWorkerStats } from './update-worker-options';
import { LocalStoreLink, ZmqStoreLink, type StoreLink } from './store-link';
import { keepUndelivered } from './undelivered';

export type { UpdateWorkerOptions, UpdateWorkerStats } from './update-worker-options';

/** The options without a default (the others are filled in by start()). */
type OptionalKeys =
  | 'logger'
  | 'pilot'
  | 'storeSecurity'
  | 'updatesAddress'
  | 'storeAddress'
  | 'store'
  | 'spill'
  | 'keepUndeliveredIn';

interface Unacked {
  count: number;
  /** Kept for keepUndeliveredIn: what the batch carried. */
  notifications?: Notification[];
  timer: NodeJS.Timeout;
  /** Times it was sent again. */
  resent: number;
}

/**
 * Moves notifications from the agent's updates queue to the state store in batches
 * (docs/architecture.md, The state store). Several workers compete on one queue, so the store sees them out of order.
 * Delivery is at least once: a batch is kept and re-sent until acknowledged, and the store's
 * append is idempotent. Notifications still queued inside the PULL socket at close() are lost.
 */
export class UpdateWorker {
  private readonly receiver: QueueReceiver | undefined;
  private readonly link: StoreLink;
  private readonly log: Logger;
  /** Counts the bulks this worker refuses and logs them at a bounded rate. */
  private readonly bad: BadMessages;
  private readonly prefix: string;
  /** What waits to be sent, in order: memory, then the spill file. */
  private readonly queue: SpillQueue;
  private batchTimer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  /** When the last batch went (performance.now()). */
  private lastSent = -Infinity;
  private readonly unacked = new Map<string, Unacked>();
  /** Resolved when a batch is acknowledged while the worker waits for room to pull more. */
  private room: Deferred<void> | undefined;
  /** Resolved when the last unacknowledged batch is acknowledged while closing. */
  private drained: Deferred<void> | undefined;
  private closing: Promise<void> | undefined;
  private readonly pulling: Promise<void>;
  private seq = 0;
  private readonly counts = { received: 0, acked: 0, invalid: 0, resent: 0, givenUp: 0 };
  private givenUpUnsent = 0;
  /** Set once close() gave up: later replies change nothing (they are counted given up). */
  private gaveUp = false;
  private readonly pulledListeners = new Set<() => void>();

  private constructor(
    private readonly opts: Required<Omit<UpdateWorkerOptions, OptionalKeys>> &
      Pick<UpdateWorkerOptions, OptionalKeys>,
  ) {
    this.log = opts.logger.child({ component: 'update-worker', worker: opts.name });
    this.bad = new BadMessages(this.log);
    // Random part: batch ids stay unique across restarts of a worker with the same name.
    this.prefix = `${opts.name}.${randomBytes(4).toString('hex')}`;
    this.queue = new SpillQueue({
      ...(opts.spill !== undefined ? { spill: opts.spill } : {}),
      name: opts.name,
      frameSize: opts.batchSize,
      log: this.log,
    });
    const onReply = (reply: StoreReply): void => this.onReply(reply);
    if (opts.store !== undefined) this.link = new LocalStoreLink(opts.store, onReply);
    else if (opts.storeAddress !== undefined) {
      this.link = new ZmqStoreLink(opts.storeAddress, opts.storeSecurity, onReply, this.log);
    } else throw new UsageError('UpdateWorker needs a storeAddress or a store');
    this.receiver =
      opts.updatesAddress !== undefined ? new QueueReceiver(opts.updatesAddress) : undefined;
    this.pulling = this.pull();
  }

  static start(opts: UpdateWorkerOptions): UpdateWorker {
    return new UpdateWorker({
      ...(opts.updatesAddress !== undefined ? { updatesAddress: opts.updatesAddress } : {}),
      ...(opts.storeAddress !== undefined ? { storeAddress: opts.storeAddress } : {}),
      ...(opts.store !== undefined ? { store: opts.store } : {}),
      ...(opts.keepUndeliveredIn !== undefined
        ? { keepUndeliveredIn: opts.keepUndeliveredIn }
        : {}),
      session: opts.session,
      ...(opts.pilot !== undefined ? { pilot: opts.pilot } : {}),
      ...(opts.storeSecurity !== undefined ? { storeSecurity: opts.storeSecurity } : {}),
      batchSize: positiveInt('batchSize', opts.batchSize, 1024),
      batchMs: positiveInt('batchMs', opts.batchMs, 20),
      gapMs: opts.gapMs ?? 0,
      ackTimeoutMs: positiveInt('ackTimeoutMs', opts.ackTimeoutMs, 5_000),
      maxInFlight: positiveInt('maxInFlight', opts.maxInFlight, 8),
      ...(opts.spill !== undefined ? { spill: opts.spill } : {}),
      logger: opts.logger,
      name: opts.name ?? 'update-worker',
    });
  }

  stats(): UpdateWorkerStats {
    const q = this.queue;
    return {
      ...this.counts,
      givenUp: this.counts.givenUp + q.lost,
      givenUpUnsent: this.givenUpUnsent,
      inFlight: this.unacked.size,
      held: q.held,
      spilled: q.spilled,
    };
  }

  /** The spill file's path while there is one (see UpdateWorkerOptions.spill). */
  get spillFile(): string | undefined {
    return this.queue.file;
  }

  /**
   * Calls `listener` each time `received` or `invalid` grows, so a caller can wait for the
   * worker to have pulled what it sent without polling stats(). Returns the unsubscribe.
   */
  onPulled(listener: () => void): () => void {
    this.pulledListeners.add(listener);
    return () => this.pulledListeners.delete(listener);
  }

  /**
   * Stops pulling, sends what it holds, and waits up to ackTimeoutMs for every batch in
   * flight to be acknowledged; what is still unacknowledged then is logged and given up.
   */
  /** Sends to the store at `address` from now on (an embedded store's resumed client moved). */
  moveStore(address: string): void {
    this.link.move?.(address);
  }

  close(ackWaitMs = this.opts.ackTimeoutMs): Promise<void> {
    this.closing ??= this.shutdown(ackWaitMs);
    return this.closing;
  }

  /**
   * Takes notifications from this process's own components: no queue, no decoding, no
   * validation (they were never outside the process); batched and acknowledged as pulled ones.
   * Hand them over gathered (one bulk per turn, not one per notification): with no batch in
   * flight, each take is sent at once.
   */
  take(notifications: readonly Notification[]): void {
    if (this.closing !== undefined) {
      this.log.warn('notifications taken after close: dropped', { count: notifications.length });
      return;
    }
    this.counts.received += notifications.length;
    this.queue.push(notifications);
    // what a process hands over is gathered per turn already (CoalescingSender): with no batch
    // in flight it goes now, not a turn later
    if (this.unacked.size === 0 && this.gapPassed()) this.flush(true);
    else if (this.queue.length >= this.opts.batchSize) this.flush(false);
    this.armFlush();
    this.pulled();
  }

  /** Whether the gap since the last batch has passed (see gapMs). */
  private gapPassed(): boolean {
    return performance.now() - this.lastSent >= this.opts.gapMs;
  }

  private async shutdown(ackWaitMs: number): Promise<void> {
    this.receiver?.close();
    this.room?.resolve();
    await this.pulling;
    this.flush(true);
    if (this.unacked.size > 0) {
      this.drained = deferred();
      await withTimeout(this.drained.promise, ackWaitMs, 'update worker close').catch(() => {
        const notifications = [...this.unacked.values()].reduce((sum, u) => sum + u.count, 0);
        const unsent = this.queue.length;
        this.counts.givenUp = notifications + unsent;
        this.givenUpUnsent = unsent;
        this.gaveUp = true;
        this.log.warn('closing with unacknowledged batches', {
          batches: this.unacked.size,
          notifications,
          held: this.queue.held,
          spilled: this.queue.spilled,
        });
      });
    }
    for (const u of this.unacked.values()) clearTimeout(u.timer);
    if (this.gaveUp) this.keepGivenUp();
    this.queue.close();
    await this.link.close();
    this.log.info('update worker closed', { ...this.stats() });
  }

  /** What close() gave up, into keepUndeliveredIn (nothing else holds it now). */
  private keepGivenUp(): void {
    const dir = this.opts.keepUndeliveredIn;
    if (dir === undefined) return;
    const held = [...this.unacked.values()].flatMap((u) => u.notifications ?? []);
    while (this.queue.length > 0) held.push(...this.queue.shift(this.opts.batchSize));
    const { session, pilot } = this.opts;
    const names = { session, ...(pilot !== undefined ? { pilot } : {}) };
    try {
      const file = keepUndelivered(dir, this.prefix, names, held);
      if (file !== undefined) {
        this.log.info('undelivered notifications kept', { file, count: held.length });
      }
    } catch (e) {
      this.log.error('undelivered notifications lost', { count: held.length, ...errorMeta(e) });
    }
  }

  private async pull(): Promise<void> {
    if (this.receiver === undefined) return;
    try {
      for await (const message of this.receiver.messages()) {
        if (message.ok) this.accept(message.value);
        else this.reject('undecodable update message', message.error);
        // Back-pressure: leave notifications in the queue while the store is behind.
        while (this.unacked.size >= this.opts.maxInFlight && this.closing === undefined) {
          this.room = deferred();
          await this.room.promise;
        }
      }
    } catch (e) {
      this.log.error('update worker stopped pulling', errorMeta(e));
    }
  }

  private accept(value: unknown): void {
    let bulk: Notification[];
    try {
      bulk = parseNotificationBulk(value);
    } catch (e) {
      this.reject('invalid update message', e);
      return;
    }
    this.counts.received += bulk.length;
    this.log.debug('update bulk received', { count: bulk.length });
    this.queue.push(bulk);
    if (this.queue.length >= this.opts.batchSize) this.flush(false);
    this.armFlush();
    this.pulled();
  }

  private pulled(): void {
    for (const l of this.pulledListeners) l();
  }

  private armFlush(): void {
    if (this.queue.length === 0) return;
    const wait = this.lastSent + this.opts.gapMs - performance.now();
    if (this.unacked.size === 0 && wait <= 0) {
      this.immediate ??= setImmediate(() => {
        this.immediate = undefined;
        this.flush(true);
      });
    } else if (this.unacked.size === 0) {
      // sooner than a timer armed while batches were in flight
      clearTimeout(this.batchTimer);
      this.batchTimer = setTimeout(() => this.flush(true), wait);
    } else if (this.batchTimer === undefined) {
      this.batchTimer = setTimeout(() => this.flush(true), this.opts.batchMs);
    }
  }

  private reject(message: string, e: unknown): void {
    this.counts.invalid++;
    const issues = e instanceof ValidationError ? e.issues : undefined;
    this.bad.report(message, { error: coerceError(e).message, issues });
    this.pulled();
  }

  /** Sends full batches; with `all`, the partial rest too. Leaves a timer on what it keeps. */
  private flush(all: boolean): void {
    clearTimeout(this.batchTimer);
    this.batchTimer = undefined;
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.immediate = undefined;
    const { batchSize, maxInFlight } = this.opts;
    const q = this.queue;
    // at most maxInFlight batches unacknowledged (a store that does not answer gets no more):
    // the rest waits in the queue; closing sends what is in memory, for its last wait (the
    // spill file goes as acks make room: never read back whole)
    const room = (): boolean =>
      this.unacked.size < maxInFlight || (this.closing !== undefined && q.headInMemory);
    while ((q.length >= batchSize || (all && q.length > 0)) && room()) {
      this.sendBatch(q.shift(batchSize));
    }
  }

  private sendBatch(notifications: Notification[]): void {
    const request: StoreRequest = {
      batch: `${this.prefix}.${this.seq++}`,
      session: this.opts.session,
      ...(this.opts.pilot !== undefined ? { pilot: this.opts.pilot } : {}),
      notifications,
    };
    this.lastSent = performance.now();
    this.unacked.set(request.batch, {
      count: notifications.length,
      ...(this.opts.keepUndeliveredIn !== undefined ? { notifications } : {}),
      timer: this.armResend(request.batch),
      resent: 0,
    });
    this.link.send(request);
  }

  private armResend(batch: string): NodeJS.Timeout {
    return setTimeout(() => {
      const u = this.unacked.get(batch);
      if (u === undefined) return;
      this.counts.resent++;
      // A store that cannot write (a full disk) holds batches for long: said once per batch.
      const level = u.resent++ === 0 ? 'warn' : 'debug';
      this.log[level]('store ack timed out, re-sending batch', { batch, count: u.count });
      u.timer = this.armResend(batch);
      this.link.resend(batch);
    }, this.opts.ackTimeoutMs);
  }

  private onReply(reply: StoreReply): void {
    const u = this.unacked.get(reply.batch);
    // A late ack of a batch that was re-sent and already acknowledged.
    if (u === undefined || this.gaveUp) return;
    if (!reply.ok) {
      const final = reply.error?.code === 'E_VALIDATION' || reply.error?.code === 'E_REFUSED';
      if (!final) {
        this.log.warn('store could not append batch, will re-send', {
          batch: reply.batch,
          error: reply.error,
        });
        return;
      }
      // Sending the same bytes again cannot succeed: give the batch up, loudly.
      this.log.error('store rejected batch', {
        batch: reply.batch,
        count: u.count,
        error: reply.error,
      });
    } else {
      this.counts.acked += u.count;
    }
    clearTimeout(u.timer);
    this.unacked.delete(reply.batch);
    this.link.forget(reply.batch);
    if (this.unacked.size < this.opts.maxInFlight) this.room?.resolve();
    if (this.closing !== undefined) {
      // closing: what is still queued (spilled) goes as acks make room, within the wait
      this.flush(true);
      if (this.unacked.size === 0) this.drained?.resolve();
    } else if (this.unacked.size === 0) {
      if (this.gapPassed()) this.flush(true);
      else this.armFlush();
    } else if (this.queue.length > 0) {
      // room again for what waited at the bound
      if (this.queue.length >= this.opts.batchSize) this.flush(false);
      this.armFlush();
    }
  }
}

function positiveInt(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new UsageError(`UpdateWorker option ${name} must be an integer >= 1, got ${value}`);
  }
  return value;
}
