import type { Notification } from '../generated';

export type { Notification, Reason } from '../generated';
export type NotificationDetail = NonNullable<Notification['detail']>;

/** Idempotence key of a notification: a store keeps one per (kind, uid, attempt, state). */
export function notificationKey(
  n: Pick<Notification, 'kind' | 'uid' | 'attempt' | 'state'>,
): string {
  return `${n.kind}\u0000${n.uid}\u0000${n.attempt}\u0000${n.state}`;
}
