import type {
  CancelResult,
  ControlReply,
  ControlRequest,
  ExplainResult,
  SandboxLook,
  SessionStatus,
} from '../../generated';

export type {
  CancelResult,
  ControlError,
  ControlReply,
  ControlRequest,
  ExplainResult,
  PilotStatus,
  RunningTask,
  SessionState,
  SessionStatus,
} from '../../generated';

/**
 * The control socket of a live session: `<session dir>/control.sock`, a Unix socket only its
 * owner can reach (docs/security.md). One request per line (schemas/control-request.schema.json),
 * one reply per line (schemas/control-reply.schema.json), in order. `pilotfish
 * status|cancel|explain|sessions` use it.
 */
export const CONTROL_SOCKET = 'control.sock';

/** Longest request line: a cancel of 100,000 uids fits; a longer line is refused, not buffered. */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** A Unix socket path longer than this cannot be bound (sun_path holds 108 bytes with its NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** An op of the control protocol: the `op` of a request. */
export type ControlOp = ControlRequest['op'];

/** The request of one op. */
export type ControlRequestOf<Op extends ControlOp> = Extract<ControlRequest, { op: Op }>;

/**
 * What each op answers: the types generated from `definitions/<op>` of
 * schemas/control-reply.schema.json (the handler table and its test keep the two together).
 */
export interface ControlResults {
  status: SessionStatus;
  explain: ExplainResult;
  cancel: CancelResult;
  sandbox: SandboxLook;
}

/** A reply to a request of `Op`, its result typed. */
export type ControlReplyTo<Op extends ControlOp> =
  | Extract<ControlReply, { ok: false }>
  | (Omit<Extract<ControlReply, { ok: true }>, 'result'> & { result: ControlResults[Op] });

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
// every op answers, and nothing answers an op that is not: a compile error otherwise
const _everyOpAnswers: Same<keyof ControlResults, ControlOp> = true;
