/** The options and the figures of an UpdateWorker (update-worker.ts). */
import type { Logger } from '../lib/logger';
import type { ClientSecurity } from '../transport/curve';
import type { StateStore } from './state-store';
import type { SpillOptions } from './spill-queue';

export interface UpdateWorkerOptions {
  /**
   * A queue bridge's `out`: the worker connects a PULL socket to it. Without one it takes only
   * what its own process hands it (`take`).
   */
  updatesAddress?: string;
  /** A StoreServer's endpoint: the worker connects a DEALER socket to it. */
  storeAddress?: string;
  /** Or the store of this process, appended to directly (see LocalStoreLink). */
  store?: StateStore;
  /** The session every batch names. */
  session: string;
  /** The pilot whose agent runs this worker (none: the client's own); every batch names it. */
  pilot?: string;
  /** This agent's keys where the store's socket is a CURVE server. */
  storeSecurity?: ClientSecurity;
  /** Notifications per batch (default 1024). */
  batchSize?: number;
  /**
   * Longest wait after the first buffered notification before its batch goes while batches
   * are in flight (default 20). With none in flight a batch goes at once (next turn), and an
   * ack sends what gathered meanwhile: low latency when idle, big batches under load.
   */
  batchMs?: number;
  /**
   * Least time between two batches while notifications keep coming (default 0): what comes
   * within it joins the next batch. Each batch costs its worker and the store a wake-up; a
   * batch after a quiet spell goes at once.
   */
  gapMs?: number;
  /** A batch not acknowledged within this time is sent again (default 5000). */
  ackTimeoutMs?: number;
  /**
   * Unacknowledged batches at which the worker sends no more and stops pulling notifications
   * (default 8); what it is handed meanwhile (take) waits in its buffer.
   */
  maxInFlight?: number;
  /**
   * Bounds that buffer: past `memoryLimit` notifications (default 50,000) the rest goes to a
   * file in `dir` and is read back in order as the store catches up (SpillQueue). Without it
   * the buffer has no bound.
   */
  spill?: SpillOptions;
  /**
   * Where what is given up at close() is kept (undelivered.ts), for a resumed client to append:
   * an agent's pilot sandbox. Without it, what is given up is only counted.
   */
  keepUndeliveredIn?: string;
  logger: Logger;
  name?: string;
}

export interface UpdateWorkerStats {
  /** Valid notifications pulled from the queue. */
  received: number;
  /** Notifications in batches the store acknowledged. */
  acked: number;
  /** Batches sent and not acknowledged yet. */
  inFlight: number;
  /** Queue messages dropped because they were not msgpack or not a NotificationBulk. */
  invalid: number;
  /** Batches sent again after their ack timed out. */
  resent: number;
  /**
   * Notifications given up: at close(), those of batches still unacknowledged and those never
   * sent (held or spilled); and spilled ones that could not be read back (logged at error).
   */
  givenUp: number;
  /** Of givenUp, those never sent to the store (an embedded store counts the rest as lost). */
  givenUpUnsent: number;
  /** Notifications waiting in memory to be sent (not in flight). */
  held: number;
  /** Notifications waiting in the spill file (see UpdateWorkerOptions.spill). */
  spilled: number;
}
