import type { TaskRecord } from '../../generated';
import type { Notification } from '../../states/notification';
import type { ManagerOutputStagerEffects } from './effects';

/** The ManagerOutputStager's effects: it publishes, and hands retried tasks back to scheduling. */
export class ManagerOutputStagerShell implements ManagerOutputStagerEffects {
  constructor(
    readonly notify: (notifications: Notification[]) => void,
    readonly retry: (tasks: TaskRecord[]) => void,
  ) {}
}
