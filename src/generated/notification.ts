/* Generated from schemas/notification.schema.json by scripts/gen-types.js: do not edit. */

export interface Notification {
  kind: 'task' | 'pilot';
  uid: string;
  attempt: number;
  state: string;
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
