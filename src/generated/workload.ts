/* Generated from schemas/workload.schema.json by scripts/gen-types.js: do not edit. */
import type { PilotDescription } from './pilot-description';
import type { TaskDescription } from './task-description';

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
