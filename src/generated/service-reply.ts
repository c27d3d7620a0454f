/* Generated from schemas/service-reply.schema.json by scripts/gen-types.js: do not edit. */
import type { Reason } from './reason';
import type { TaskState } from './task-state';

/**
 * What the jobs service's HTTP API answers for tasks and tokens (docs/service.md): a page of tasks, one task, who a token is. The dashboard is typed against these; the service's tests check its answers against them.
 */
export type ServiceReply = TaskPage | TaskDetail | Whoami;

/**
 * GET /v1/tasks: a page of tasks in submission order, filtered.
 */
export interface TaskPage {
  tasks: TaskSummary[];
  /**
   * The `after` of the page that follows (absent on the last; pages by `after`).
   */
  next?: string;
  /**
   * How many tasks match, in all (pages by `offset`).
   */
  total?: number;
  /**
   * The place of the page's first task among them (pages by `offset`).
   */
  offset?: number;
  /**
   * The id of the session's latest event when the page was made: follow GET /v1/events from it (pages by `offset`).
   */
  events?: number;
}
/**
 * A task in a list: small, so that a page of 1,000 stays small.
 */
export interface TaskSummary {
  uid: string;
  name?: string;
  state: TaskState;
  attempt: number;
  /**
   * The pilot it is bound to, once bound.
   */
  pilot?: string;
  /**
   * Why it failed or was canceled.
   */
  reason?: Reason;
  /**
   * Its command's exit code, once known.
   */
  exitCode?: number;
}
/**
 * GET /v1/tasks/{uid}: a task on its own.
 */
export interface TaskDetail {
  uid: string;
  name?: string;
  state: TaskState;
  attempt: number;
  pilot?: string;
  reason?: Reason;
  exitCode?: number;
  final: boolean;
  /**
   * The task's description, as given.
   */
  description: {};
  history: HistoryEntry[];
  /**
   * The signal that ended its command.
   */
  signal?: string;
  /**
   * The tail of its stdout.
   */
  stdout?: string;
  /**
   * The tail of its stderr.
   */
  stderr?: string;
  /**
   * A function call's result.
   */
  result?: {
    [k: string]: unknown;
  };
  /**
   * A service's host:port, once ready.
   */
  endpoint?: string;
  /**
   * Its directory on the pilot's host.
   */
  sandbox?: string;
  /**
   * What it waits for (`pilotfish explain`), while it has not ended.
   */
  explanation?: {};
  /**
   * When it is expected to start (ISO time), where the pilot's scheduler can tell.
   */
  estimatedStart?: string;
  [k: string]: unknown;
}
/**
 * One state of a task's history, in model order.
 */
export interface HistoryEntry {
  state: TaskState;
  attempt: number;
  /**
   * True: the task passed it, but its own notification did not arrive.
   */
  inferred: boolean;
  /**
   * When its owner made the transition (epoch ms; absent when inferred).
   */
  ts?: number;
}
/**
 * GET /v1/whoami: the token the request came with, and what it may do.
 */
export interface Whoami {
  /**
   * The session the service serves.
   */
  session: string;
  /**
   * The token's id (`token list`).
   */
  id: string;
  /**
   * The note it was made with.
   */
  label?: string;
  scopes: ('read' | 'submit' | 'admin')[];
  may: {
    /**
     * Submit and cancel tasks.
     */
    submit: boolean;
    /**
     * Everything: pilots, tokens.
     */
    admin: boolean;
  };
}
