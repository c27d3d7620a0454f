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
  code: string;
  message: string;
  component: string;
  detail?: {};
}
