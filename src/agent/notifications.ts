import type { Clock } from '../lib/clock';
import type { Logger } from '../lib/logger';
import { errorMeta } from '../errors';
import type { Notification } from '../states/notification';
import { CoalescingSender } from '../transport/coalescing-sender';
import { published } from '../components/shared/transition';
import type { UpdateWorker } from '../updater/update-worker';
import { HeldStarts } from './held-starts';

/**
 * Every component's notifications, gathered per turn and handed to the agent's UpdateWorkers
 * (one bulk to each in turn), counted so a shutdown knows when the workers have taken them all.
 * The workers run in this process: the bulk goes to them as it is, never encoded on the way.
 * The starts of function calls are held briefly first (HeldStarts).
 */
export class AgentNotifications {
  private readonly sender: CoalescingSender<Notification>;
  private sent = 0;
  private next = 0;
  private readonly starts: HeldStarts;

  constructor(
    workers: readonly Pick<UpdateWorker, 'take'>[],
    log: Logger,
    clock: Clock,
    /** Told of every bulk (the agent's journal: which tasks reached a final state). */
    private readonly tap?: { ended(notifications: readonly Notification[]): void },
  ) {
    const take = (bulk: unknown): Promise<void> => {
      const w = workers[this.next++ % workers.length];
      if (w === undefined) return Promise.reject(new Error('no UpdateWorker takes notifications'));
      w.take(bulk as Notification[]);
      return Promise.resolve();
    };
    this.sender = new CoalescingSender<Notification>({ send: take }, (e: unknown) =>
      log.error('notify: send failed', errorMeta(e)),
    );
    this.starts = new HeldStarts(clock, (ns) => this.out(ns));
  }

  /** Notifications handed to the workers so far. */
  get count(): number {
    return this.sent;
  }

  /** Sends what is to be published of `notifications` (quiet ones are not: see isQuiet). */
  send(notifications: readonly Notification[]): void {
    this.tap?.ended(notifications);
    this.out(this.starts.pass(published(notifications)));
  }

  /** Sends what is gathered now, held starts included (before the workers close). */
  flush(): void {
    this.starts.flush();
    this.sender.flush();
  }

  private out(ns: readonly Notification[]): void {
    this.sent += ns.length;
    this.sender.send(ns);
  }
}
