import type { Notification } from '../../states/notification';

export interface ManagerOutputStagerEffects {
  notify(notifications: Notification[]): void;
}
