import type { Notification } from '../../states/notification';
import type { ManagerOutputStagerEffects } from './effects';

/** The ManagerOutputStager's effects: it only publishes (the final state is its last word). */
export class ManagerOutputStagerShell implements ManagerOutputStagerEffects {
  constructor(readonly notify: (notifications: Notification[]) => void) {}
}
