import type { TaskRecord } from '../../generated';
import type { Timer } from '../../lib/clock';
import type { Notification } from '../../states/notification';
import type { ExecutorEffects, ExecutorJob, ExitedEvent } from './effects';
import type { ExecutorKind } from './kinds';

/** What the ExecutorCore holds of one task while it is AGENT_EXECUTING. */
export interface Held {
  task: TaskRecord;
  kind: ExecutorKind;
  job: ExecutorJob;
  pid?: number;
  /** When its process started and ended, as the spawner (or function pool) measured it. */
  launched?: number;
  exited?: number;
  canceled: boolean;
  /** Asked to stop ('term'); 'kill' follows after the grace period. */
  terminating: boolean;
  /** An exit by a signal we did not send, held for signaledExitGraceMs. */
  exit?: ExitedEvent;
  /** A follow-on start (task.follows): its timeoutS, armed when it really starts. */
  timeoutAtStart?: number;
  /** A follow-on start was given its slots (it starts when this one's process ends). */
  followed?: boolean;
  /** A kind with readiness (a service): whether its job reported ready, and until when it may. */
  ready?: boolean;
  startup?: Timer;
  timers: Timer[];
}

/** Whether its job has started (a process reported its pid or start time). */
export function started(h: Held): boolean {
  return h.pid !== undefined || h.launched !== undefined;
}

/** A task just taken (started, or taken over from an agent before). */
export function heldOf(task: TaskRecord, kind: ExecutorKind, job: ExecutorJob): Held {
  return { task, kind, job, canceled: false, terminating: false, timers: [] };
}

/** One handler call's effects, so each kind goes out as a single bulk. */
export class Batch {
  readonly notes: Notification[] = [];
  readonly forward: TaskRecord[] = [];
  readonly release: TaskRecord[] = [];

  flush(effects: ExecutorEffects): void {
    if (this.notes.length > 0) effects.notify(this.notes);
    if (this.forward.length > 0) effects.forward(this.forward);
    if (this.release.length > 0) effects.release(this.release);
  }
}
