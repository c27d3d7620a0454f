import { IllegalTransitionError } from '../../errors';
import type { Notification, NotificationDetail } from '../../states/notification';
import { ownerOf } from '../../states/model';
import { isQuiet, isSupersedable } from '../../states/quiet-states';
import { TASK_MODEL, type TaskState } from '../../states/task-model';
import type { TaskRecord } from '../../generated';
import { carry, forgetCarried } from './quiet-carry';

/**
 * Moves a task the calling component holds to `to` and returns the notification to publish.
 * Throws IllegalTransitionError when the model does not give `component` this transition,
 * so a component can never change a state it does not own.
 */
export function transition(
  task: TaskRecord,
  to: TaskState,
  component: string,
  ts: number,
  detail?: NotificationDetail,
): Notification {
  const from = task.state;
  if (ownerOf(TASK_MODEL, from, to) !== component) {
    throw new IllegalTransitionError(from, to, component);
  }
  task.state = to;
  const d = task.description;
  const n = taskNotification(
    task.uid,
    task.attempt,
    to,
    ts,
    component,
    detail,
    d.mode,
    d.inputStaging !== undefined || d.outputStaging !== undefined,
  );
  carry(task, n, n instanceof QuietNotification);
  return n;
}

/**
 * transition() for a holder whose notifications nobody reads (the simulator without a Profile):
 * the same check, the state set, no notification made, and what earlier quiet ones left on the
 * record for the next published one dropped (quiet-carry.ts). At a million tasks the
 * notifications and what they carry are most of the garbage.
 */
export function shift(task: TaskRecord, to: TaskState, component: string): void {
  if (ownerOf(TASK_MODEL, task.state, to) !== component) {
    throw new IllegalTransitionError(task.state, to, component);
  }
  task.state = to;
  forgetCarried(task);
}

/**
 * Records what `n`, the notification of a task's first state made without a transition (NEW,
 * by the TaskManager), says, as transition() does for the others (see carry).
 */
export function born(task: TaskRecord, n: Notification): void {
  if (n instanceof QuietNotification) carry(task, n, true);
}

/** The notifications to publish: `ns` less the quiet ones (`ns` itself when none is). */
export function published(ns: readonly Notification[]): readonly Notification[] {
  for (let i = 0; i < ns.length; i++) {
    if (ns[i] instanceof QuietNotification) {
      return ns.filter((n) => !(n instanceof QuietNotification));
    }
  }
  return ns;
}

/** A task notification whose class marks how it is published (the two below). */
class MarkedNotification {
  readonly kind = 'task' as const;
  declare detail?: NotificationDetail;

  constructor(
    readonly uid: string,
    readonly attempt: number,
    readonly state: TaskState,
    readonly ts: number,
    readonly component: string,
  ) {}
}

/**
 * A notification that is not published (see isQuiet): the cores return it like any other (their
 * tests see every transition), the publishers drop it. A class rather than a mark on a plain
 * object: `instanceof` costs nothing, a WeakSet entry about 0.3 µs per notification.
 */
class QuietNotification extends MarkedNotification {}

/**
 * A published notification that a later one of its attempt may supersede while the agent holds
 * it (see isSupersedable): encoded as a plain one, told apart by `instanceof`.
 */
class SupersedableNotification extends MarkedNotification {}

/** Whether `n` is not published (isQuiet). */
export function isQuietNotification(n: Notification): boolean {
  return n instanceof QuietNotification;
}

/** Whether `n` may be superseded by a later notification of its attempt (isSupersedable). */
export function isSupersedableNotification(n: Notification): boolean {
  return n instanceof SupersedableNotification;
}

/**
 * The notification of a task of `mode` entering `state`: quiet when isQuiet says so,
 * supersedable when isSupersedable does.
 */
export function taskNotification(
  uid: string,
  attempt: number,
  state: TaskState,
  ts: number,
  component: string,
  detail: NotificationDetail | undefined,
  mode: string | undefined,
  /** The task has staging directives (see isQuiet). */
  staged = false,
): Notification {
  const n: Notification = isQuiet(mode, state, detail, staged)
    ? new QuietNotification(uid, attempt, state, ts, component)
    : isSupersedable(mode, state, detail)
      ? new SupersedableNotification(uid, attempt, state, ts, component)
      : { kind: 'task', uid, attempt, state, ts, component };
  if (detail !== undefined) n.detail = detail;
  return n;
}

/**
 * Checks a whole bulk before any of it moves: every task must arrive in `from`, the X_PENDING
 * state its upstream set. Throws IllegalTransitionError (`from` is the task's state, `to` the
 * state the component would set on receipt) so a bad hand-over cannot leave the rest of the
 * bulk transitioned but never announced nor handed on.
 */
export function checkArrivals(
  tasks: readonly TaskRecord[],
  from: TaskState,
  to: TaskState,
  component: string,
): void {
  for (const t of tasks) {
    if (t.state !== from) throw new IllegalTransitionError(t.state, to, component);
  }
}

/** Effects every task component has: hand tasks on, publish notifications. */
export interface StageEffects {
  /** Pushes tasks (already moved to the next X_PENDING) onto the next component's queue. */
  forward(tasks: TaskRecord[]): void;
  /** Publishes state notifications onto the updates queue. */
  notify(notifications: Notification[]): void;
}
