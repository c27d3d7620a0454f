import type { TaskRecord } from '../../generated';
import type { Logger } from '../../lib/logger';
import type { Notification } from '../../states/notification';
import type { QueueSender } from '../../transport/queue';
import { sendLogged } from '../shared/shell';
import type { ManagerSchedulerEffects } from './effects';

/** The ManagerScheduler's effects: placed tasks go to the ManagerInputStager's queue. */
export class ManagerSchedulerShell implements ManagerSchedulerEffects {
  constructor(
    private readonly log: Logger,
    readonly notify: (notifications: Notification[]) => void,
    private readonly toInputStager: Pick<QueueSender, 'send'>,
  ) {}

  forward(tasks: TaskRecord[]): void {
    sendLogged(this.toInputStager, tasks, this.log, 'forward');
  }
}
