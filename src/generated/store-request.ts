/* Generated from schemas/store-request.schema.json by scripts/gen-types.js: do not edit. */
import type { Notification } from './notification';

/**
 * A batch an UpdateWorker asks the embedded store to append; acknowledged once on disk.
 */
export interface StoreRequest {
  batch: string;
  /**
   * The session the batch belongs to; checked by the store.
   */
  session: string;
  /**
   * The pilot whose agent sent the batch (absent: the client itself); its notifications may name only that pilot and its tasks.
   */
  pilot?: string;
  notifications: Notification[];
}
