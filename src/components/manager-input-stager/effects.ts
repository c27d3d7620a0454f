import type { TaskRecord } from '../../generated';
import type { Notification } from '../../states/notification';

export interface ManagerInputStagerEffects {
  /** Pushes tasks (in AGENT_STAGING_INPUT_PENDING) onto the pilot's agent input queue. */
  forwardToPilot(pilot: string, tasks: TaskRecord[]): void;
  notify(notifications: Notification[]): void;
  /** Hands tasks whose pilot ended before they reached it back to the ManagerScheduler. */
  retry(tasks: TaskRecord[]): void;
}
