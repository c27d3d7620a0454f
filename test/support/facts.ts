import type { Notification, NotificationDetail } from '../../src/states/notification';

/**
 * A notification's detail less `passed` (the quiet states before it, see quiet-carry.ts): what
 * a component said, for tests of that and not of which states were quiet.
 */
export function facts(n: Notification | undefined): NotificationDetail | undefined {
  if (n?.detail === undefined) return undefined;
  const { passed: _passed, ...rest } = n.detail;
  return Object.keys(rest).length === 0 ? undefined : rest;
}
