/* Generated from schemas/pilot-description.schema.json by scripts/gen-types.js: do not edit. */

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
  /**
   * Memory the pilot may give to tasks, in MiB; defaults to the machine's total.
   */
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
