/* Generated from schemas/store-request.schema.json by scripts/gen-types.js: do not edit. */
import type { Notification } from './notification';

/**
 * A batch an UpdateWorker asks the embedded store to append; acknowledged once on disk.
 */
export interface StoreRequest {
  batch: string;
  notifications: Notification[];
}
