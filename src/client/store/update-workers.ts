import { errorMeta } from '../../errors';
import type { Logger } from '../../lib/logger';
import type { Notification } from '../../states/notification';
import { CoalescingSender } from '../../transport/coalescing-sender';
import type { StateStore } from '../../updater/state-store';
import { UpdateWorker } from '../../updater/update-worker';

/**
 * The client's own UpdateWorkers and what hands them this process's notifications, gathered
 * per turn and dealt round robin. They append to the session's store in this process: never
 * encoded, sent or validated on the way (the StoreServer is for the agents). What waits for
 * the store past their memory limit spills into the session directory `dir`.
 */
export function clientWorkers(
  count: number,
  store: StateStore,
  { session, dir }: { session: string; dir: string },
  log: Logger,
): { workers: UpdateWorker[]; notes: CoalescingSender<Notification> } {
  const workers: UpdateWorker[] = [];
  let next = 0;
  const take = (bulk: unknown): Promise<void> => {
    workers[next++ % workers.length]!.take(bulk as Notification[]);
    return Promise.resolve();
  };
  const notes = new CoalescingSender<Notification>({ send: take }, (e: unknown) =>
    log.error('notify failed', errorMeta(e)),
  );
  for (let i = 0; i < Math.max(1, count); i++) {
    workers.push(
      UpdateWorker.start({
        store,
        session,
        logger: log.child({ component: 'UpdateWorker', worker: i }),
        name: `${session}.client.uw${i}`,
        spill: { dir },
      }),
    );
  }
  return { workers, notes };
}
