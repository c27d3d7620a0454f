import type { Logger } from '../../lib/logger';
import type { StateStore } from '../../updater/state-store';
import { readUndelivered, removeUndelivered } from '../../updater/undelivered';
import type { JournalEntry } from './journal';

/**
 * A resumed session first appends to its store what its pilots' agents could not deliver before
 * they ended without it (their grace ran out: updater/undelivered.ts), so that a task that ran
 * while the client was away is known to have, and is not run again. The store's append is
 * idempotent: a file taken twice (a crash before its removal) changes nothing.
 */
export async function takeUndelivered(
  resumed: readonly JournalEntry[],
  store: StateStore,
  session: string,
  log: Logger,
): Promise<void> {
  for (const entry of resumed) {
    if (entry.t !== 'pilots') continue;
    for (const p of entry.pilots) {
      const { notifications, files } = readUndelivered(p.sandbox, session, p.uid, log);
      if (files.length === 0) continue;
      if (notifications.length > 0) await store.append(notifications);
      log.info('undelivered notifications of an ended agent taken', {
        pilot: p.uid,
        count: notifications.length,
      });
      removeUndelivered(files, log);
    }
  }
}
