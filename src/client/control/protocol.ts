import type { ValidationIssue } from '../../errors';
import type { Reason } from '../../generated';
import type { PilotState } from '../../states/pilot-model';
import type { TaskState } from '../../states/task-model';
import type { Explanation } from '../tasks/explain';

/**
 * The control socket of a live session: `<session dir>/control.sock`, a Unix socket only its
 * owner can reach (docs/security.md). One request per line (schemas/control-request.schema.json),
 * one reply per line, in order. `pilotfish status|cancel|explain|sessions` use it.
 */
export const CONTROL_SOCKET = 'control.sock';

/** Longest request line: a cancel of 100,000 uids fits; a longer line is refused, not buffered. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** A Unix socket path longer than this cannot be bound (sun_path holds 108 bytes with its NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** How a session stands: `live` (its client answers), `ended` (closed), `crashed` (no close). */
export type SessionState = 'live' | 'closing' | 'ended' | 'crashed';

export interface PilotStatus {
  uid: string;
  state: PilotState;
  resource: string;
  cores: number;
  gpus: number;
  reason?: Reason;
}

export interface RunningTask {
  uid: string;
  name?: string;
  pilot?: string;
  /** When it started executing (epoch ms), where known. */
  since?: number;
}

/** What `status` answers (and `pilotfish status --json` prints, live or from the store). */
export interface SessionStatus {
  session: string;
  dir: string;
  state: SessionState;
  /** The client's process, while live. */
  pid?: number;
  pilots: PilotStatus[];
  /** Tasks per state (states with none left out). */
  counts: Partial<Record<TaskState, number>>;
  total: number;
  /** Tasks executing now: the first ones (by submission), `runningTotal` in all. */
  running: RunningTask[];
  runningTotal: number;
  /** The oldest tasks not yet executing, with what they wait for; `pendingTotal` in all. */
  pending: Explanation[];
  pendingTotal: number;
}

/** What `cancel` answers: each uid asked, in one list. */
export interface CancelResult {
  /** Canceled now (they end CANCELED, or in the final state they reach first). */
  canceled: string[];
  /** No task of the session has this uid. */
  unknown: string[];
  /** Already in a final state: left as they are. */
  final: string[];
}

export interface ControlError {
  /** E_VALIDATION (with `issues`: JSON path and message), E_BAD_JSON, E_TOO_LARGE, E_CLOSING, E_INTERNAL. */
  code: string;
  message: string;
  issues?: ValidationIssue[];
}

/** A reply line: `id` echoes the request's. */
export type ControlReply<T = unknown> =
  | { id?: number | string; ok: true; result: T }
  | { id?: number | string; ok: false; error: ControlError };
