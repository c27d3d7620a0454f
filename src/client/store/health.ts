import { errorMeta } from '../../errors';
import type { Logger } from '../../lib/logger';
import { EmbeddedStore } from '../../updater/embedded/store';
import type { StoreServer } from '../../updater/embedded/store-server';
import { backoffMs, isUnreachableError } from '../../updater/mongodb/plan';
import type { MongoStore } from '../../updater/mongodb/store';
import {
  StoreUnreachableError,
  StoreUnwritableError,
  type StoreCondition,
} from '../../updater/state-store';
import type { SessionStore } from '../../updater/store-choice';
import { Listeners } from '../calls/listeners';

/** A file of the session that can fail to be written, seen from the session. */
export interface WritableSource {
  /** The condition now (undefined while it writes). */
  readonly unwritable: StoreUnwritableError | undefined;
  onUnwritable(listener: (e: StoreUnwritableError | undefined) => void): () => void;
  /** Writes what it holds, if it writes synchronously (journal, counters). */
  retry?(): boolean;
}

/** A store that can lose its servers (MongoStore), seen from the session. */
export interface ReachSource {
  /** While no server answers: the condition; undefined while they do. */
  readonly unreachable: StoreUnreachableError | undefined;
  onUnreachable(listener: (e: StoreUnreachableError | undefined) => void): () => void;
}

/**
 * Whether the session can write its files: the store first (its notifications), then the
 * journal and the delivered counters, which live beside it and fail with it on a full disk.
 * Listeners (`Session.onStoreError`) hear the condition begin (the error) and end (undefined);
 * while it lasts, `check()` throws it to calls that need the store. The store retries on its
 * own; the others are retried at each check and when the store writes again.
 */
export class StoreHealth {
  private readonly sources: WritableSource[] = [];
  private readonly listeners: Listeners<[StoreCondition | undefined]>;
  private reported: StoreCondition | undefined;
  /** A MongoDB store that lost its servers (reported, but refusing nothing: see watchReach). */
  private reach: ReachSource | undefined;

  constructor(private readonly log: Logger) {
    this.listeners = new Listeners(log);
  }

  /** Follows `source`; the first one added is the store. */
  watch(source: WritableSource): void {
    this.sources.push(source);
    source.onUnwritable((e) => {
      // the disk is back: what the others hold can be written now too
      if (e === undefined && source === this.sources[0]) this.retryOthers();
      this.update();
    });
  }

  /**
   * Follows a MongoDB store's servers. While none answers, listeners hear a
   * StoreUnreachableError, but nothing is refused: tasks go on, the UpdateWorkers hold what
   * they could not write (and the agents' workers theirs), and all of it is written once a
   * server answers again.
   */
  watchReach(store: ReachSource): void {
    this.reach = store;
    store.onUnreachable(() => this.update());
  }

  /** What listeners hear: a condition that refuses (error), else the store's unreachability. */
  get condition(): StoreCondition | undefined {
    return this.error ?? this.reach?.unreachable;
  }

  /** The condition now that refuses work: the first source's that cannot write, or undefined. */
  get error(): StoreUnwritableError | undefined {
    for (const s of this.sources) {
      const e = s.unwritable;
      if (e !== undefined) return e;
    }
    return undefined;
  }

  onChange(listener: (e: StoreCondition | undefined) => void): () => void {
    return this.listeners.add(listener);
  }

  /** Throws the condition, if there is one once the journal and counters are retried. */
  check(): void {
    if (this.error === undefined) return;
    this.retryOthers();
    this.update();
    const e = this.error;
    if (e !== undefined) throw e;
  }

  /**
   * At the end of close: if the store gave up notifications it could not write, tells
   * listeners and throws the error that counts them. An embedded store counts what it was
   * given; the session's workers count what they never sent it (held or spilled).
   */
  throwIfLost(
    session: SessionStore | undefined,
    workers: readonly { stats(): { givenUp: number; givenUpUnsent: number } }[] = [],
  ): void {
    if (session !== undefined && !(session instanceof EmbeddedStore)) {
      const givenUp = workers.reduce((n, w) => n + w.stats().givenUp, 0);
      return this.throwIfGivenUp(session, givenUp);
    }
    const store = session;
    const lost = (store?.lost ?? 0) + workers.reduce((n, w) => n + w.stats().givenUpUnsent, 0);
    if (lost === 0) return;
    const last = store?.unwritable;
    const e = new StoreUnwritableError({
      errno: last?.errno ?? 'EIO',
      path: last?.path ?? store!.file,
      since: last?.since ?? Date.now(),
      held: 0,
      lost,
    });
    this.log.error('session closed with notifications it could not write', errorMeta(e));
    this.listeners.fire(e);
    throw e;
  }

  /**
   * A MongoDB store: the session's own UpdateWorkers gave up `givenUp` notifications at close
   * (no server answered while they waited). The agents' workers count their own in their logs.
   */
  private throwIfGivenUp(store: MongoStore, givenUp: number): void {
    if (givenUp === 0) return;
    const last = store.unreachable;
    const e = new StoreUnreachableError({
      hosts: store.target.hosts,
      reason: last?.reason ?? 'no server acknowledged them in time',
      since: last?.since ?? Date.now(),
      lost: givenUp,
    });
    this.log.error('session closed with notifications it could not write', errorMeta(e));
    this.listeners.fire(e);
    throw e;
  }

  /**
   * Retries the files written synchronously (journal, counters): every source with retry().
   * Not "all but the first": a MongoDB session's first source is its journal, not a store
   * that retries on its own, and a journal never retried here would refuse work for good.
   */
  private retryOthers(): void {
    for (const s of this.sources) s.retry?.();
  }

  /** Tells listeners when the session goes from writing to not writing, or back. */
  private update(): void {
    const e = this.condition;
    const was = this.reported;
    if (e?.code === was?.code) return;
    this.reported = e;
    if (e !== undefined) this.log.warn(lineOf(e), errorMeta(e));
    else if (was?.code === 'E_STORE_UNREACHABLE') this.log.info('session store reachable again');
    else this.log.info('session store writes again');
    this.listeners.fire(e);
  }
}

function lineOf(e: StoreCondition): string {
  return e.code === 'E_STORE_UNREACHABLE'
    ? 'session store unreachable'
    : 'session store cannot write';
}

/**
 * Closes the store server and the store together: the server waits for the appends under way,
 * and a store that cannot write (a full disk) ends those only as it closes (one last try, then
 * what it holds is given up and counted in `lost`). `stopWatch` ends the session's following.
 */
export async function closeStore(
  server: StoreServer | undefined,
  store: SessionStore | undefined,
  stopWatch: () => Promise<unknown>,
): Promise<void> {
  const served = server?.close();
  const closed = store?.close();
  await served;
  await stopWatch();
  await closed;
}

/**
 * Runs a read of the session's store, again (backing off to 5 s) while it fails for want of
 * a MongoDB server: what a resumed session needs from its store waits through an outage
 * rather than failing for good. Any other failure, or `stopped()`, ends it.
 */
export async function throughOutage<T>(read: () => Promise<T>, stopped: () => boolean): Promise<T> {
  for (let failures = 0; ; failures++) {
    try {
      return await read();
    } catch (e) {
      if (!isUnreachableError(e) || stopped()) throw e;
      // unref'd: a session closing meanwhile is not held open by it
      await new Promise((resolve) => setTimeout(resolve, backoffMs(failures)).unref());
    }
  }
}
