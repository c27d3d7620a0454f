import type { Logger } from '../lib/logger';
import { errorMeta } from '../errors';
import type { Notification } from '../states/notification';
import { CoalescingSender } from '../transport/coalescing-sender';
import type { QueueSender } from '../transport/queue';

/**
 * Every component's notifications, one message per turn onto the updates queue, counted so a
 * shutdown knows when the UpdateWorkers have pulled them all.
 */
export class AgentNotifications {
  private readonly sender: CoalescingSender<Notification>;
  private sent = 0;

  constructor(updates: Pick<QueueSender, 'send'>, log: Logger) {
    this.sender = new CoalescingSender<Notification>(updates, (e: unknown) =>
      log.error('notify: send failed', errorMeta(e)),
    );
  }

  /** Notifications handed to the updates queue so far. */
  get count(): number {
    return this.sent;
  }

  send(notifications: readonly Notification[]): void {
    this.sent += notifications.length;
    this.sender.send(notifications);
  }

  /** Sends what is gathered now (before the senders close). */
  flush(): void {
    this.sender.flush();
  }
}
