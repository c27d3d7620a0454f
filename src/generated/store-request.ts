/* Generated from schemas/store-request.schema.json by scripts/gen-types.js: do not edit. */

/**
 * A batch an UpdateWorker asks the embedded store to append; acknowledged once on disk.
 */
export interface StoreRequest {
  batch: string;
  notifications: Notification[];
}
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
