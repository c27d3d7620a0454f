/* Generated from schemas/task-description.schema.json by scripts/gen-types.js: do not edit. */

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
