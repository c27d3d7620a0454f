import type { Clock } from '../../lib/clock';
import type { Logger } from '../../lib/logger';
import type { Notification } from '../../states/notification';
import type { QueueSender } from '../../transport/queue';

/** What a task component's shell needs besides its own work: where its output goes. */
export interface ShellDeps {
  /** The process's notification sender (onto the updates queue). */
  notes: { send(notifications: readonly Notification[]): void };
  /** The next component's queue. */
  next: Pick<QueueSender, 'send'>;
  log: Logger;
  clock: Clock;
}
