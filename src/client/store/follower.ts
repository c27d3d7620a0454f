import { errorMeta } from '../../errors';
import type { Logger } from '../../lib/logger';
import type { Notification } from '../../states/notification';
import { backoffMs } from '../../updater/mongodb/plan';
import { markOf, type SessionStore } from '../../updater/store-choice';

type NotificationListener = (ns: Notification[]) => void;

/**
 * Follows the session's store from its beginning and hands every notification it accepts to
 * the listeners, in store order, in bulks; tells who waits when all it held is delivered.
 *
 * "All it held" is a mark of the store (markOf): the embedded store's is its size, which the
 * watch's positions reach; MongoDB's is the highest seq slot written, which the watch's
 * `through` reaches, through slots that hold gap markers too (they make no bulk, so the watch
 * says when it passes them). A mark MongoDB cannot give now (no server answers) is asked
 * again until it can: who waits for a drain waits through an outage, it does not fail.
 */
export class StoreFollower {
  private readonly listeners = new Set<NotificationListener>();
  private loop: Promise<void> | undefined;
  private iterator: AsyncIterator<{ cursor: number; notifications: Notification[] }> | undefined;
  /** The store mark the listeners have had everything up to. */
  private reached = 0;
  private readonly caughtUp: { upTo: number; resolve(): void }[] = [];
  private stopped = false;

  constructor(
    private readonly store: SessionStore,
    private readonly log: Logger,
    /** Told how many notifications each bulk delivered (the memory trimmer counts activity). */
    private readonly activity: (count: number) => void,
  ) {}

  onNotifications(listener: NotificationListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  start(): void {
    this.loop ??= this.follow();
  }

  /** Resolves once every notification the store holds now has been delivered to listeners. */
  async drained(): Promise<void> {
    const m = markOf(this.store);
    const upTo = typeof m === 'number' ? m : await this.askMark(m);
    if (upTo === undefined || this.reached >= upTo || this.stopped) return;
    await new Promise<void>((resolve) => this.caughtUp.push({ upTo, resolve }));
  }

  /** The store's mark, asked again (backing off to 5 s) while it fails; undefined: stopped. */
  private async askMark(first: Promise<number>): Promise<number | undefined> {
    let ask = first;
    for (let failures = 0; ; failures++) {
      try {
        return await ask;
      } catch (e) {
        if (this.stopped) return undefined;
        if (failures === 0) this.log.warn('store mark unavailable, asking again', errorMeta(e));
        // unref'd: a session closing meanwhile is not held open by it
        await new Promise((resolve) => setTimeout(resolve, backoffMs(failures)).unref());
        if (this.stopped) return undefined;
        const next = markOf(this.store);
        ask = typeof next === 'number' ? Promise.resolve(next) : next;
      }
    }
  }

  /** Stops following (the store closes); whoever waits for a drain is let go. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.iterator?.return?.();
    await this.loop;
    for (const c of this.caughtUp.splice(0)) c.resolve();
  }

  /** Ends the store's watch, so that the store can close (see closeStore). */
  async endWatch(): Promise<void> {
    this.stopped = true;
    await this.iterator?.return?.();
  }

  private async follow(): Promise<void> {
    const watch = this.store.watch(0);
    const it = watch[Symbol.asyncIterator]();
    this.iterator = it;
    // MongoDB's watch says how far it has read; the embedded one's positions say it
    const through = 'through' in watch ? (): number => watch.through : undefined;
    if ('onProgress' in watch) watch.onProgress(() => this.reach(watch.through));
    try {
      for (;;) {
        const r = await it.next();
        if (r.done === true) break;
        const { notifications } = r.value;
        for (const l of this.listeners) {
          try {
            l(notifications);
          } catch (e) {
            this.log.error('notification listener failed', errorMeta(e));
          }
        }
        this.activity(notifications.length);
        this.reach(through?.() ?? r.value.cursor + notifications.length);
      }
    } catch (e) {
      if (!this.stopped) this.log.error('store watch stopped', errorMeta(e));
    }
  }

  private reach(mark: number): void {
    this.reached = mark;
    for (let i = this.caughtUp.length - 1; i >= 0; i--) {
      if (this.caughtUp[i]!.upTo <= mark) this.caughtUp.splice(i, 1)[0]!.resolve();
    }
  }
}
