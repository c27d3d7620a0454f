import { errorMeta } from '../errors';
import type { Logger } from '../lib/logger';
import type { Notification } from '../states/notification';
import type { EmbeddedStore } from '../updater/embedded/store';

type NotificationListener = (ns: Notification[]) => void;

/**
 * Follows the session's store from its beginning and hands every notification it accepts to
 * the listeners, in store order, in bulks; tells who waits when all it held is delivered.
 */
export class StoreFollower {
  private readonly listeners = new Set<NotificationListener>();
  private loop: Promise<void> | undefined;
  private iterator: AsyncIterator<{ cursor: number; notifications: Notification[] }> | undefined;
  private delivered = 0;
  private readonly caughtUp: { upTo: number; resolve(): void }[] = [];
  private stopped = false;

  constructor(
    private readonly store: EmbeddedStore,
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
    const upTo = this.store.size;
    if (this.delivered >= upTo) return;
    await new Promise<void>((resolve) => this.caughtUp.push({ upTo, resolve }));
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
    const it = this.store.watch(0)[Symbol.asyncIterator]();
    this.iterator = it;
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
        this.delivered = r.value.cursor + notifications.length;
        this.activity(notifications.length);
        for (let i = this.caughtUp.length - 1; i >= 0; i--) {
          if (this.caughtUp[i]!.upTo <= this.delivered) this.caughtUp.splice(i, 1)[0]!.resolve();
        }
      }
    } catch (e) {
      if (!this.stopped) this.log.error('store watch stopped', errorMeta(e));
    }
  }
}
