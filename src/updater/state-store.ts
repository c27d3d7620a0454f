import type { Notification } from '../generated';
import { PilotfishError } from '../errors';

/** One bulk of a watch stream; the next resume cursor is `cursor + notifications.length`. */
export interface WatchBulk {
  /** Number of accepted notifications before the first one of this bulk. */
  cursor: number;
  notifications: Notification[];
}

/**
 * Where UpdateWorkers write notifications and the client reads them back (DESIGN.md §4).
 * Backends: embedded (append-only file), mongodb. Notifications arrive out of order by design;
 * the store keeps acceptance order, the StateTracker rebuilds model order.
 */
export interface StateStore {
  /**
   * Appends a batch; idempotent on notificationKey (kind, uid, attempt, state), also within
   * the batch. Resolves with the number newly accepted, only once they are durable.
   */
  append(batch: Notification[]): Promise<number>;
  /**
   * Every accepted notification at position >= fromCursor (default 0), in acceptance order,
   * in bulks. Stays open, delivering new ones as they are accepted, until close() or the
   * iterator's return().
   */
  watch(fromCursor?: number): AsyncIterable<WatchBulk>;
  /** Accepted notifications in acceptance order, of one uid or of all. */
  history(uid?: string): Promise<Notification[]>;
  /** Finishes appends already asked for, ends every watch, releases the backend. */
  close(): Promise<void>;
}

/** Thrown when a store can no longer accept appends (its file could not be repaired). */
export class StoreError extends PilotfishError {
  readonly code = 'E_STORE';
}
