import { getSystemErrorMap } from 'node:util';
import type { Notification } from '../generated';
import { PilotfishError } from '../errors';

/** One bulk of a watch stream; the next resume cursor is `cursor + notifications.length`. */
export interface WatchBulk {
  /** Number of accepted notifications before the first one of this bulk. */
  cursor: number;
  notifications: Notification[];
}

/**
 * Where UpdateWorkers write notifications and the client reads them back (docs/state-store.md).
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

/** What a StoreUnwritableError reports. */
export interface StoreUnwritable {
  /** The errno of the failed call: ENOSPC, EDQUOT, EIO, ... */
  errno: string;
  /** The file that could not be written. */
  path: string;
  /** When the condition began (epoch ms). */
  since: number;
  /** Notifications held in memory, to be written once the file can be written again. */
  held: number;
  /** Notifications given up (the store closed while it still could not write). */
  lost?: number;
}

/**
 * Thrown (and reported to `Session.onStoreError` listeners) when a file of the session's store
 * cannot be written, a full disk most often. Nothing is lost while it lasts: what cannot be
 * written is held and written, in order, once space is back; only `lost` notifications, given
 * up at close, are gone.
 */
export class StoreUnwritableError extends PilotfishError {
  readonly code = 'E_STORE_UNWRITABLE';
  readonly errno: string;
  readonly path: string;
  readonly since: number;
  readonly held: number;
  readonly lost: number;

  constructor(u: StoreUnwritable, options?: ErrorOptions) {
    const lost = u.lost ?? 0;
    const why = errnoMessage(u.errno);
    super(
      `session store cannot write ${u.path}: ${u.errno}${why === undefined ? '' : ` (${why})`}` +
        (lost > 0
          ? `; ${lost} notifications were lost (given up at close)`
          : u.held > 0
            ? `; ${u.held} notifications are held and will be written once it can`
            : ''),
      options,
    );
    this.errno = u.errno;
    this.path = u.path;
    this.since = u.since;
    this.held = u.held;
    this.lost = lost;
  }
}

/** What a StoreUnreachableError reports. */
export interface StoreUnreachable {
  /** The servers the store's URI names (host:port), never its credentials. */
  hosts: string[];
  /** The driver's words for the failure ('connect ECONNREFUSED 127.0.0.1:27017'). */
  reason: string;
  /** When the condition began (epoch ms). */
  since: number;
  /** Notifications given up (the session closed while no server answered). */
  lost?: number;
}

/**
 * Thrown when a MongoDB store cannot be reached: by `Session.open` when no server answers
 * within the server-selection timeout, and reported to `Session.onStoreError` listeners while
 * a session loses its server. Nothing is lost while it lasts: UpdateWorkers hold what they
 * could not write and write it, once only, when the server answers again.
 */
export class StoreUnreachableError extends PilotfishError {
  readonly code = 'E_STORE_UNREACHABLE';
  readonly hosts: string[];
  readonly reason: string;
  readonly since: number;
  readonly lost: number;

  constructor(u: StoreUnreachable, options?: ErrorOptions) {
    const lost = u.lost ?? 0;
    super(
      `cannot reach MongoDB at ${u.hosts.join(',')}: ${u.reason}` +
        (lost > 0 ? `; ${lost} notifications were lost (given up at close)` : ''),
      options,
    );
    this.hosts = u.hosts;
    this.reason = u.reason;
    this.since = u.since;
    this.lost = lost;
  }
}

/** A store's condition as a session reports it (Session.onStoreError). */
export type StoreCondition = StoreUnwritableError | StoreUnreachableError;

/** The errno of a failed file call ('EIO' when it carries none). */
export function errnoOf(e: unknown): string {
  const code = (e as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : 'EIO';
}

/** The system's words for an errno name ('no space left on device' for ENOSPC). */
function errnoMessage(errno: string): string | undefined {
  for (const [name, message] of getSystemErrorMap().values()) if (name === errno) return message;
  return undefined;
}
