import type { Reason } from '../generated';
import type { FinalTaskState } from './task-model';

/**
 * A task reached a final state, as the store told it, wherever it was decided (an agent's
 * component or a client's). Client components hear of every one, in store order: what they
 * kept for the task can go, and (later) what waits on it can move.
 */
export interface TaskFinal {
  uid: string;
  attempt: number;
  state: FinalTaskState;
  /** The pilot it was given to, if any. */
  pilot?: string;
  reason?: Reason;
}

/** A service task's attempt became ready, as the store told it. */
export interface TaskReady {
  uid: string;
  attempt: number;
  /** `host:port` (or `host`) where it serves. */
  endpoint: string;
  /** Its name in its dependents' PF_SERVICE_<NAME> (serviceEnvName). */
  name: string;
}
