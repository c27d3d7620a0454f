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
 * The states of an executable whose notification is not published: its hand-overs, which last
 * a turn, and the moves of its stagers when it has no staging directives (a tail read, a
 * sandbox made). Each is carried, with its real time, by the next published notification
 * (quiet-carry.ts), so a profile still has every state. Published are where a task can wait:
 * for dependencies or a pilot with room (TMGR_SCHEDULING), the hand-off to the agent, for cores
 * (AGENT_SCHEDULING) and its run (AGENT_EXECUTING), both held briefly (isSupersedable), the
 * hand-back and the final state: four to six per task instead of sixteen.
 */
const QUIET_EXECUTABLE_STATES: ReadonlySet<TaskState> = new Set<TaskState>([
  'NEW',
  'TMGR_SCHEDULING_PENDING',
  'TMGR_STAGING_INPUT_PENDING',
  'AGENT_SCHEDULING_PENDING',
  'AGENT_EXECUTING_PENDING',
  'AGENT_STAGING_OUTPUT_PENDING',
]);

/** What a stager does to a task without directives takes no time worth showing. */
const QUIET_UNSTAGED_STATES: ReadonlySet<TaskState> = new Set<TaskState>([
  'TMGR_STAGING_INPUT',
  'AGENT_STAGING_INPUT',
  'AGENT_STAGING_OUTPUT',
  'TMGR_STAGING_OUTPUT',
]);

/**
 * Quiet states whose detail a later published notification repeats, so they stay quiet with
 * it: the pilot (repeated on AGENT_STAGING_INPUT_PENDING) and the exit (on the hand-back). Any
 * other detail (a retry's `retried`, a reason) makes the notification published, but where its
 * files are (onlyWhere).
 */
const REPEATED_LATER: ReadonlySet<TaskState> = new Set<TaskState>([
  'TMGR_STAGING_INPUT_PENDING',
  'AGENT_STAGING_OUTPUT_PENDING',
]);

/**
 * Whether a detail says only where a task's files are (its own sandbox, streamed output): that
 * can wait for its next published notification, which carries it (quiet-carry.ts) at most
 * START_HOLD_MS after it starts to run.
 */
function onlyWhere(detail: NotificationDetail): boolean {
  for (const k in detail) if (k !== 'sandbox' && k !== 'output') return false;
  return true;
}

/**
 * Whether the notification of a task of `mode` entering `state` with `detail` is not published;
 * `staged`: the task has staging directives. A service's are all published.
 */
export function isQuiet(
  mode: string | undefined,
  state: TaskState,
  detail: NotificationDetail | undefined,
  staged = false,
): boolean {
  if (detail !== undefined && !REPEATED_LATER.has(state) && !onlyWhere(detail)) return false;
  if (mode === 'function') return QUIET_FUNCTION_STATES.has(state);
  if (mode === 'service') return false;
  return QUIET_EXECUTABLE_STATES.has(state) || (!staged && QUIET_UNSTAGED_STATES.has(state));
}

/** Whether the hand-off of a task of `mode` to its agent names the pilot (its assignment was quiet). */
export function handOffNamesPilot(mode: string | undefined): boolean {
  return isQuiet(mode, 'TMGR_STAGING_INPUT_PENDING', { pilot: '' });
}

/**
 * How long the agent holds a start (AGENT_EXECUTING), or an executable's AGENT_SCHEDULING,
 * before publishing it: a later state within that time makes it redundant (isSupersedable).
 */
export const START_HOLD_MS = 25;

/**
 * Whether the notification of a task of `mode` entering `state` is published only if no later
 * one of its attempt supersedes it within START_HOLD_MS: the start of a function call or an
 * executable, and an executable's wait for cores. Most calls and many commands end within
 * milliseconds, and most tasks find cores at once: the store then takes three or four
 * notifications per task. A task that waits or runs longer shows it while it does, at most
 * START_HOLD_MS late (with its real `ts`). A later non-final state supersedes it and carries its
 * time and detail (`detail.passed`, see quiet-carry.ts): a task that fails or is canceled
 * shows its start before its end.
 */
export function isSupersedable(
  mode: string | undefined,
  state: TaskState,
  detail: NotificationDetail | undefined,
): boolean {
  if (mode === 'function') return state === 'AGENT_EXECUTING' && detail === undefined;
  if (mode === 'service') return false;
  // an executable's start names its slots, which what supersedes it carries on (carryInto)
  return state === 'AGENT_EXECUTING' || (state === 'AGENT_SCHEDULING' && detail === undefined);
}
