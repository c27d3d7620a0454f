/* Generated from schemas/notification.schema.json by scripts/gen-types.js: do not edit. */
import type { PilotState } from './pilot-state';
import type { Reason } from './reason';
import type { TaskState } from './task-state';

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
    /**
     * mode 'function', with DONE: the function's return value.
     */
    result?: unknown;
    sandbox?: string;
    /**
     * On the first state of a new attempt: the retries used so far.
     */
    retried?: number;
  };
}
