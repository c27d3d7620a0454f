import type { ModelProfile } from './models';
import type { Reason } from '../generated';
import type { PilotState } from '../states/pilot-model';
import type { TaskState } from '../states/task-model';

/**
 * A session's profile: every task attempt and every pilot with the real time (epoch ms) of each
 * state it passed, where each task ran and when its own command ran. Built from the store alone
 * (`session.profile()`, `pilotfish profile`), so a finished session has one too.
 */
export interface Profile {
  session: string;
  /** When the profile was read (epoch ms): the end of intervals still open. */
  readAt: number;
  pilots: PilotProfile[];
  tasks: TaskProfile[];
  /** The models its router ran (their replicas and swaps), where it ran one. */
  models?: ModelProfile[];
}

/** A state and the time it was entered (epoch ms). */
export interface Stamp<S extends string> {
  state: S;
  ts: number;
}

export interface PilotProfile {
  uid: string;
  /** local, slurm, ... (from its description). */
  resource?: string;
  /** Every state the pilot passed, in model order. */
  states: Stamp<PilotState>[];
  /** Its final state and the reason, once ended. */
  final?: PilotState;
  reason?: Reason;
  /** The nodes its agent found (names, cores, GPUs), once active. */
  nodes?: PilotNode[];
  /** When its job started running (the agent process began), where known. */
  jobStarted?: number;
  /** When it began to drain (asked to end, or its runtime ran out), where it did. */
  drainStarted?: number;
}

export interface PilotNode {
  name: string;
  cores: number;
  gpus: number;
}

export interface TaskProfile {
  uid: string;
  name?: string;
  mode: 'executable' | 'function' | 'service';
  /** Every attempt, first first; the last one is the task's present. */
  attempts: AttemptProfile[];
}

export interface AttemptProfile {
  attempt: number;
  /** The pilot it was bound to, once bound. */
  pilot?: string;
  /** Every state it passed with its real time, in model order (none inferred). */
  states: Stamp<TaskState>[];
  final?: TaskState;
  reason?: Reason;
  /** The cores and GPUs it held, per node (indices within the node). */
  slots?: SlotProfile[];
  /**
   * When its own command started and ended, as its spawner measured; a function call's are the
   * times the agent sent it and took its outcome (its AGENT_EXECUTING and exit states).
   */
  launched?: number;
  exited?: number;
  exitCode?: number | null;
  /** A follow-on start: queued on the slots of this task, it held them from `launched` on. */
  follows?: string;
  /** A follow-on start took its slots at `exited`. */
  followed?: true;
}

export interface SlotProfile {
  node: string;
  cores: number[];
  gpus: number[];
}
