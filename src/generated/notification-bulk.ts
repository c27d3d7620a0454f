/* Generated from schemas/notification-bulk.schema.json by scripts/gen-types.js: do not edit. */

/**
 * Notifications as a component pushes them onto the updates queue.
 *
 * @minItems 1
 */
export type NotificationBulk = [Notification, ...Notification[]];

export interface Notification {
  kind: 'task' | 'pilot';
  uid: string;
  attempt: number;
  state: string;
  ts: number;
  component: string;
  detail?: {
    pilot?: string;
    reason?: Reason;
    exitCode?: number | null;
    signal?: string | null;
    stdout?: string;
    stderr?: string;
    sandbox?: string;
  };
}
/**
 * Why a task or pilot failed or was canceled, in words a person can act on.
 */
export interface Reason {
  code: string;
  message: string;
  component: string;
  detail?: {};
}
