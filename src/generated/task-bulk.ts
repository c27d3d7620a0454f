/* Generated from schemas/task-bulk.schema.json by scripts/gen-types.js: do not edit. */

/**
 * The unit every task queue carries: many tasks in one message.
 *
 * @minItems 1
 */
export type TaskBulk = [TaskRecord, ...TaskRecord[]];

/**
 * A task as components hand it on: its description plus what the pipeline has added.
 */
export interface TaskRecord {
  uid: string;
  attempt: number;
  state: string;
  session: string;
  description: TaskDescription;
  pilot?: string;
  sandbox?: string;
  slots?: {
    node: string;
    cores: number[];
    gpus: number[];
  }[];
  exitCode?: number | null;
  signal?: string | null;
  stdout?: string;
  stderr?: string;
  reason?: Reason;
  canceled?: boolean;
}
/**
 * What a user asks a pilot to run.
 */
export interface TaskDescription {
  uid?: string;
  name?: string;
  mode?: 'executable';
  executable: string;
  arguments?: string[];
  environment?: {
    [k: string]: string;
  };
  /**
   * Working directory; defaults to the task sandbox.
   */
  workdir?: string;
  ranks?: number;
  coresPerRank?: number;
  gpusPerRank?: number;
  memPerRankMb?: number;
  launch?: 'fork';
  priority?: number;
  timeoutS?: number;
  pilot?: string;
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
