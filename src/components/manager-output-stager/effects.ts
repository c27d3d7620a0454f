import type { TaskRecord } from '../../generated';
import type { Notification } from '../../states/notification';

export interface ManagerOutputStagerEffects {
  notify(notifications: Notification[]): void;
  /** Hands the next attempts of retried tasks (at TMGR_SCHEDULING_PENDING) to the ManagerScheduler. */
  retry(tasks: TaskRecord[]): void;
}
