import type { TaskRecord } from '../generated';
import type { Logger } from '../lib/logger';

/**
 * Drops tasks this agent already received: a resumed client sends again the ones it cannot
 * tell arrived (AGENT_STAGING_INPUT_PENDING when it died). A task sent twice runs once, and an
 * attempt older than one received runs never (it was fenced when the newer one began).
 */
export class FirstSight {
  /** uid -> the latest attempt received (a Map of the uids: no key string made per task). */
  private readonly received = new Map<string, number>();

  /** What an agent before this one received (its journal's): copies sent again are dropped. */
  seed(received: ReadonlyMap<string, number>): void {
    for (const [uid, attempt] of received) this.received.set(uid, attempt);
  }

  filter(tasks: TaskRecord[], log: Logger): TaskRecord[] {
    const fresh = tasks.filter((t) => {
      const latest = this.received.get(t.uid);
      if (latest !== undefined && latest >= t.attempt) return false;
      this.received.set(t.uid, t.attempt);
      return true;
    });
    if (fresh.length < tasks.length) {
      log.info('dropped tasks received twice', { count: tasks.length - fresh.length });
    }
    return fresh;
  }
}
