/* Generated from schemas/notification-bulk.schema.json by scripts/gen-types.js: do not edit. */

/**
 * Notifications as a component pushes them onto the updates queue.
 *
 * @minItems 1
 */
export type NotificationBulk = [Notification, ...Notification[]];
/**
 * A state of the task model, in model order (docs/state-model.md).
 */
export type TaskState =
  | 'NEW'
  | 'TMGR_SCHEDULING_PENDING'
  | 'TMGR_SCHEDULING'
  | 'TMGR_STAGING_INPUT_PENDING'
  | 'TMGR_STAGING_INPUT'
  | 'AGENT_STAGING_INPUT_PENDING'
  | 'AGENT_STAGING_INPUT'
  | 'AGENT_SCHEDULING_PENDING'
  | 'AGENT_SCHEDULING'
  | 'AGENT_EXECUTING_PENDING'
  | 'AGENT_EXECUTING'
  | 'AGENT_STAGING_OUTPUT_PENDING'
  | 'AGENT_STAGING_OUTPUT'
  | 'TMGR_STAGING_OUTPUT_PENDING'
  | 'TMGR_STAGING_OUTPUT'
  | 'DONE'
  | 'FAILED'
  | 'CANCELED';
/**
 * A state of the pilot model, in model order (docs/state-model.md).
 */
export type PilotState =
  | 'NEW'
  | 'PMGR_LAUNCHING_PENDING'
  | 'PMGR_LAUNCHING'
  | 'PMGR_ACTIVE_PENDING'
  | 'PMGR_ACTIVE'
  | 'DONE'
  | 'FAILED'
  | 'CANCELED';

export interface Notification {
  kind: 'task' | 'pilot';
  uid: string;
  attempt: number;
  state: TaskState | PilotState;
  ts: number;
  component: string;
  detail?: {
    pilot?: string;
    reason?: Reason;
    exitCode?: number | null;
    signal?: string | null;
    stdout?: string;
    stderr?: string;
    sandbox?: string;
  };
}
/**
 * Why a task or pilot failed or was canceled, in words a person can act on.
 */
export interface Reason {
  /**
   * One of the codes of src/states/reason-codes.ts (docs/reason-codes.md).
   */
  code:
    | 'E_AGENT_DIED'
    | 'E_BAD_MESSAGE'
    | 'E_BAD_REQUEST'
    | 'E_CANCELED'
    | 'E_EXEC_FAILED'
    | 'E_EXEC_NOT_FOUND'
    | 'E_EXEC_PERMISSION'
    | 'E_EXIT_CODE'
    | 'E_JOB_CANCELED'
    | 'E_JOB_FAILED'
    | 'E_LAUNCH'
    | 'E_LAUNCH_METHOD'
    | 'E_LAUNCH_SLOTS'
    | 'E_MODE_UNSUPPORTED'
    | 'E_NEVER_ACTIVE'
    | 'E_NEVER_FITS'
    | 'E_NO_EXIT_CODE'
    | 'E_NO_SANDBOX'
    | 'E_NO_SUCH_PILOT'
    | 'E_PILOT_ENDED'
    | 'E_RUNTIME_EXCEEDED'
    | 'E_SIGNALED'
    | 'E_STAGING'
    | 'E_TASK_TIMEOUT'
    | 'E_UNSUPPORTED'
    | 'I_PILOT_DONE';
  message: string;
  component: string;
  detail?: {};
}
