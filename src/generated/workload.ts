/* Generated from schemas/workload.schema.json by scripts/gen-types.js: do not edit. */

/**
 * What `pilotfish run FILE` runs: pilots, then tasks.
 */
export interface Workload {
  /**
   * @minItems 1
   */
  pilots?: [PilotDescription, ...PilotDescription[]];
  tasks: TaskDescription[];
  timeoutS?: number;
}
/**
 * A placeholder job that holds resources for tasks.
 */
export interface PilotDescription {
  uid?: string;
  resource: 'local';
  /**
   * Cores the pilot holds; defaults to every core of the machine.
   */
  cores?: number;
  gpus?: number;
  memMb?: number;
  runtimeMin?: number;
  sandbox?: string;
  agent?: {
    executors?: number;
    spawners?: number;
    updateWorkers?: number;
    killGraceMs?: number;
    logLevel?: 'error' | 'warn' | 'info' | 'debug';
  };
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
