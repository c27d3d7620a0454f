import type { Reason } from '../generated';
import type { TaskState } from '../states/task-model';
import type { ClientRuntime } from './runtime';

/**
 * Why a task is where it is: its state and, while it waits, what it waits for; once ended, how.
 * `tmgr.explain(uid)`, `pilotfish explain` and `pilotfish status` show it.
 */
export interface Explanation {
  uid: string;
  name?: string;
  state: TaskState;
  attempt: number;
  /** The pilot it is bound to, once bound. */
  pilot?: string;
  /** Since when it is in `state` (epoch ms), where known. */
  since?: number;
  /** While it waits: what for, as its present owner reports it. */
  waiting?: WaitReason;
  /** Once it ended other than DONE: why. */
  reason?: Reason;
}

/** What a waiting task waits for (one line for people in `message`, the facts beside it). */
export interface WaitReason {
  /** pilot, dependencies, resources, reservation, tag, never, or queued (in transit). */
  kind: 'pilot' | 'dependencies' | 'resources' | 'reservation' | 'tag' | 'never' | 'queued';
  message: string;
  /** The component that holds the task and keeps this current. */
  component: string;
  /** When the owner last set it (epoch ms). */
  ts: number;
  /** kind 'dependencies': the uids not yet satisfied. */
  dependencies?: string[];
  /** kind 'resources': what it asks on one node, and the largest free there now. */
  asks?: { cores: number; gpus: number; memMb?: number };
  largestFree?: { node: string; cores: number; gpus: number; memMb?: number };
  /** kind 'reservation': the task the free cores are held for. */
  behind?: string;
  /** kind 'tag': the tag. */
  tag?: { exclusive?: string; colocate?: string };
}

/** The explanation of a task of the session, or undefined for a uid it does not have. */
export function explainTask(rt: ClientRuntime, uid: string): Explanation | undefined {
  const task = rt.tasks.get(uid);
  if (task === undefined) return undefined;
  const last = task.history.at(-1);
  return {
    uid,
    ...(task.description.name !== undefined ? { name: task.description.name } : {}),
    state: task.state,
    attempt: task.attempt,
    ...(task.pilot !== undefined ? { pilot: task.pilot } : {}),
    ...(last?.ts !== undefined ? { since: last.ts } : {}),
    ...(task.reason !== undefined && task.state !== 'DONE' ? { reason: task.reason } : {}),
  };
}
