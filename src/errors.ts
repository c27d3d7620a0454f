import type { Reason } from './generated/reason';

/** Base class: every error pilotfish throws on purpose carries a stable machine-readable code. */
export abstract class PilotfishError extends Error {
  abstract readonly code: string;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

export interface ValidationIssue {
  /** JSON pointer into the rejected input ('/' for the whole input). */
  path: string;
  message: string;
}

/** How many issues a ValidationError's message lists; `issues` holds them all. */
const ISSUES_IN_MESSAGE = 10;

/**
 * Issues as one line for a message: `/0/x must be string; /3/y ...`, the first ten, then how
 * many more (a bulk of 10,000 bad descriptions must not make a message of megabytes).
 */
export function issuesText(issues: readonly ValidationIssue[]): string {
  const shown = issues.slice(0, ISSUES_IN_MESSAGE).map((x) => `${x.path} ${x.message}`);
  const more = issues.length - shown.length;
  return shown.join('; ') + (more > 0 ? `; and ${more} more (see the error's issues)` : '');
}

/** Thrown when a description, config file or wire message does not match its schema. */
export class ValidationError extends PilotfishError {
  readonly code = 'E_VALIDATION';
  constructor(
    message: string,
    readonly issues: ValidationIssue[],
  ) {
    super(message);
  }
}

/** Thrown when a component is asked for a transition the state model does not allow. */
export class IllegalTransitionError extends PilotfishError {
  readonly code = 'E_ILLEGAL_TRANSITION';
  constructor(
    readonly from: string,
    readonly to: string,
    readonly component: string,
  ) {
    super(`illegal transition ${from} -> ${to} by ${component}`);
  }
}

/** Thrown when a socket or bridge cannot be set up or used. */
export class TransportError extends PilotfishError {
  readonly code = 'E_TRANSPORT';
}

/** Thrown when waiting for something took longer than allowed. */
export class TimeoutError extends PilotfishError {
  readonly code = 'E_TIMEOUT';
}

/** Thrown when a pilot cannot be launched or has ended. */
export class PilotError extends PilotfishError {
  readonly code = 'E_PILOT';
}

/**
 * Thrown when what a call waits for can no longer happen because the task ended (a service that
 * ended before it was ready): `state` is how it ended, `reason` why, when it says.
 */
export class TaskEndedError extends PilotfishError {
  readonly code = 'E_TASK_ENDED';
  constructor(
    readonly task: string,
    readonly state: string,
    readonly reason: { code: string; message: string } | undefined,
  ) {
    super(
      `task ${task} ended ${state} before it was ready` +
        (reason !== undefined ? `: ${reason.code}: ${reason.message}` : ''),
    );
  }
}

/**
 * Thrown (a rejection of a function handle's `call` or `map`, docs/functions.md "Typed
 * handles") when the task of a call ended FAILED or CANCELED: `reason` says why (its `code`,
 * e.g. E_FUNCTION_THREW, and `message`; a throw's stack in `reason.detail.stack`), `task` is
 * the call's task uid and, for a call of a `map`, `index` its place in the list.
 */
export class FunctionCallError extends PilotfishError {
  /** The same for every failed call: the task's own code is `reason.code`. */
  readonly code = 'E_FUNCTION_CALL';
  constructor(
    /** The export name of the handle: the function called. */
    readonly fn: string,
    /** The uid of the call's task (`tmgr.get(task)` has its history). */
    readonly task: string,
    /** How the task ended: FAILED or CANCELED. */
    readonly state: string,
    /** Why, as the task's `reason`: undefined only if its end said none. */
    readonly reason: Reason | undefined,
    /** For a call of a `map` or `mapSettled`: its place in the list; else undefined. */
    readonly index?: number,
  ) {
    const which = index === undefined ? '' : ` (call ${index} of a map)`;
    const why = reason === undefined ? '' : `: ${reason.code}: ${reason.message}`;
    super(`${fn}${which} ended ${state} in task ${task}${why}`);
  }
}

/** Thrown when an API is used in a way its contract forbids (closed session, unknown uid). */
export class UsageError extends PilotfishError {
  readonly code = 'E_USAGE';
}

/**
 * Thrown when a `transfer` staging action fails: `code` is the errno name of the file operation
 * that failed (ENOENT, EACCES, ENOSPC, ... on either side) or E_TRANSFER (the channel went
 * silent, a checksum differed, the file changed while it was copied); the message names the file.
 */
export class TransferError extends PilotfishError {
  constructor(
    readonly code: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * Thrown when a task's output cannot be read where the client runs: its sandbox is not on this
 * machine (a pilot on nodes that share no file system with the client), or the task writes no
 * output file (a function call). `path` is what was looked for.
 */
export class OutputUnavailableError extends PilotfishError {
  readonly code = 'E_OUTPUT_UNAVAILABLE';
  constructor(
    message: string,
    readonly path?: string,
  ) {
    super(message);
  }
}

/** Thrown on a branch that must be impossible; the tag names the place. */
export class InternalError extends PilotfishError {
  readonly code = 'E_INTERNAL';
  constructor(tag: string, options?: ErrorOptions) {
    super(`internal error [${tag}]`, options);
  }
}

/** Turns anything caught into an Error without losing its message. */
export function coerceError(e: unknown): Error {
  if (e instanceof Error) return e;
  return new Error(typeof e === 'string' ? e : JSON.stringify(e));
}

/** Log metadata for an error: winston drops message and stack of an Error nested in meta. */
export function errorMeta(e: unknown): {
  error: { name: string; message: string; code?: string; stack?: string };
} {
  const err = coerceError(e);
  const code = (err as { code?: unknown }).code;
  return {
    error: {
      name: err.name,
      message: err.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(err.stack !== undefined ? { stack: err.stack } : {}),
    },
  };
}
