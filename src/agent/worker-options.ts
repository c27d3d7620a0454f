import type { AgentConfig } from '../generated';
import type { Logger } from '../lib/logger';
import type { MongoStore } from '../updater/mongodb/store';
import type { UpdateWorkerOptions } from '../updater/update-worker';

/**
 * Least time between two notification batches of one UpdateWorker while tasks keep changing:
 * the store's side of a batch (its receipt, an ack, a write) costs the client about as much
 * as its content, and callbacks may come this much later under load, never a task. Measured
 * with 5,000 `/bin/true` on 2 cores: 20 ms against 5 ms took a quarter off the CPU per task of
 * both the client and the agent.
 */
const UPDATE_GAP_MS = 20;

/**
 * The options of the agent's UpdateWorker `i` writing to `store`. What waits for a store that
 * is away (a MongoDB outage, a client gone) beyond the workers' memory limit spills into the
 * pilot's sandbox: the agent writes its logs there already.
 */
export function agentWorkerOptions(
  cfg: AgentConfig,
  i: number,
  store: { store: MongoStore } | { storeAddress: string },
  log: Logger,
): UpdateWorkerOptions {
  return {
    ...store,
    session: cfg.session,
    pilot: cfg.pilot,
    ...(cfg.curve !== undefined ? { storeSecurity: cfg.curve } : {}),
    logger: log.child({ component: 'UpdateWorker', worker: i }),
    name: `${cfg.pilot}.uw${i}`,
    gapMs: UPDATE_GAP_MS,
    spill: { dir: cfg.sandbox },
    // what it gives up when it ends without its client, for the client's resume to take
    keepUndeliveredIn: cfg.sandbox,
  };
}
