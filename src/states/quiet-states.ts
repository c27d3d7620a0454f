import type { NotificationDetail } from './notification';
import type { TaskState } from './task-model';

/**
 * The states of a function task whose notification is not published: the StateTracker infers
 * them (`inferred: true`) from the next one that is. A function call is short, and sixteen
 * notifications per call would make the store, not the workers, bound the rate. Published are
 * the facts: the hand-off to the agent (AGENT_STAGING_INPUT_PENDING, naming the pilot, which a
 * resumed client needs), the start of the call (AGENT_EXECUTING), the hand-back with the result
 * (TMGR_STAGING_OUTPUT_PENDING) and the final state. FAILED and CANCELED are never quiet.
 */
export const QUIET_FUNCTION_STATES: ReadonlySet<TaskState> = new Set<TaskState>([
  'NEW',
  'TMGR_SCHEDULING_PENDING',
  'TMGR_SCHEDULING',
  'TMGR_STAGING_INPUT_PENDING',
  'TMGR_STAGING_INPUT',
  'AGENT_STAGING_INPUT',
  'AGENT_SCHEDULING_PENDING',
  'AGENT_SCHEDULING',
  'AGENT_EXECUTING_PENDING',
  'AGENT_STAGING_OUTPUT_PENDING',
  'AGENT_STAGING_OUTPUT',
  'TMGR_STAGING_OUTPUT',
]);

/**
 * Quiet states whose detail a later published notification repeats, so they stay quiet with
 * it: the pilot (repeated on AGENT_STAGING_INPUT_PENDING) and the exit (on the hand-back). Any
 * other detail (a retry's `retried`, a sandbox of its own) makes the notification published.
 */
const REPEATED_LATER: ReadonlySet<TaskState> = new Set<TaskState>([
  'TMGR_STAGING_INPUT_PENDING',
  'AGENT_STAGING_OUTPUT_PENDING',
]);

/** Whether the notification of a task of `mode` entering `state` with `detail` is not published. */
export function isQuiet(
  mode: string | undefined,
  state: TaskState,
  detail: NotificationDetail | undefined,
): boolean {
  return (
    mode === 'function' &&
    QUIET_FUNCTION_STATES.has(state) &&
    (detail === undefined || REPEATED_LATER.has(state))
  );
}

/** Whether the hand-off of a task of `mode` to its agent names the pilot (its assignment was quiet). */
export function handOffNamesPilot(mode: string | undefined): boolean {
  return isQuiet(mode, 'TMGR_STAGING_INPUT_PENDING', { pilot: '' });
}

/**
 * How long the agent holds the start (AGENT_EXECUTING) of a function call before publishing it:
 * a call handed back within that time makes it redundant (see isSupersedable).
 */
export const START_HOLD_MS = 25;

/**
 * Whether the notification of a task of `mode` entering `state` is published only if no later
 * one of its attempt supersedes it within START_HOLD_MS: the start of a function call. Most
 * calls end within milliseconds; their start is then inferred (as a quiet state is) and the
 * store takes three notifications per call instead of four. A call that runs longer shows its
 * start while it runs, at most START_HOLD_MS late (with its real `ts`). Only a hand-back
 * supersedes it, and then carries its time (`detail.passed`, see quiet-carry.ts): a call
 * that fails or is canceled shows its start before its end.
 */
export function isSupersedable(
  mode: string | undefined,
  state: TaskState,
  detail: NotificationDetail | undefined,
): boolean {
  return mode === 'function' && state === 'AGENT_EXECUTING' && detail === undefined;
}
