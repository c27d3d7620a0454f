/* Generated from schemas/notification-bulk.schema.json by scripts/gen-types.js: do not edit. */
import type { Notification } from './notification';

/**
 * Notifications as a component pushes them onto the updates queue.
 *
 * @minItems 1
 */
export type NotificationBulk = [Notification, ...Notification[]];
