/* Generated from schemas/workload.schema.json by scripts/gen-types.js: do not edit. */
import type { PilotDescription } from './pilot-description';
import type { TaskDescription } from './task-description';

/**
 * What `pilotfish run FILE` runs: pilots, then tasks.
 */
export interface Workload {
  /**
   * The schema of this file, for editors; pilotfish ignores it.
   */
  $schema?: string;
  /**
   * The pilots to submit, as in the API (pilot descriptions); default one local pilot with every core of this machine.
   *
   * @minItems 1
   */
  pilots?: [PilotDescription, ...PilotDescription[]];
  /**
   * The tasks to submit, as in the API (task descriptions); an empty list runs nothing and exits 0.
   */
  tasks: TaskDescription[];
  /**
   * The session's state store, as Session.open's store: 'embedded' (the default) or a MongoDB URI (mongodb://... or mongodb+srv://...). pilotfish run --store (or PILOTFISH_STORE) overrides it.
   */
  store?: (
    | 'embedded'
    | {
        [k: string]: unknown;
      }
  ) &
    string;
  /**
   * Seconds the tasks may take, from their submission (pilots may still queue then) until every task and the stop of the services ended; then `pilotfish run` prints what had not ended and exits 3.
   */
  timeoutS?: number;
}
