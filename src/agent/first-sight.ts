import type { TaskRecord } from '../generated';
import type { Logger } from '../lib/logger';

/**
 * Drops tasks this agent already received: a resumed client sends again the ones it cannot
 * tell arrived (AGENT_STAGING_INPUT_PENDING when it died). A task sent twice runs once.
 */
export class FirstSight {
  /** `uid\0attempt` of every task received. */
  private readonly received = new Set<string>();

  filter(tasks: TaskRecord[], log: Logger): TaskRecord[] {
    const fresh = tasks.filter((t) => {
      const key = `${t.uid}\u0000${t.attempt}`;
      if (this.received.has(key)) return false;
      this.received.add(key);
      return true;
    });
    if (fresh.length < tasks.length) {
      log.info('dropped tasks received twice', { count: tasks.length - fresh.length });
    }
    return fresh;
  }
}
