import type { TaskDescription, TaskRecord } from '../../generated';
import { errorMeta, issuesText, ValidationError } from '../../errors';
import { BadMessages } from '../../lib/bad-messages';
import type { Logger } from '../../lib/logger';
import { parseHandBack, parseTaskRecord, type HandBack } from '../../lib/validate';
import type { Notification } from '../../states/notification';
import { reason } from './reasons';
import type { LocalQueue } from '../../transport/local-queue';
import type { QueueReceiver, QueueSender } from '../../transport/queue';

/** What a task component's receive loop needs to know besides its handler. */
export interface Intake {
  /** The component, named in rejections. */
  component: string;
  /** The state tasks must arrive in (the component's X_PENDING). */
  arrives: string;
  handle(tasks: TaskRecord[]): void;
  /** Publishes FAILED notifications for rejected tasks, so none is lost silently. */
  notify(notifications: Notification[]): void;
  now(): number;
  /**
   * Checked before anything else where the sender may speak only of some tasks (an agent, of
   * the ones it was given): a problem refuses the item, counted and logged, and ends no task.
   */
  admit?(item: unknown): string | undefined;
  /**
   * Where the sender leaves the description out (an agent handing tasks back: the client holds
   * them): the description of task `uid`, given back to its record; undefined when there is none.
   */
  describe?(uid: string): TaskDescription | undefined;
}

/**
 * The loop every task component runs: decode, validate each task at the boundary, call one
 * handler with the valid ones. A task that is malformed or arrives in the wrong state is
 * FAILED with the reason (when it names a uid) instead of being dropped; a message that is no
 * bulk at all is logged. Nothing stops the loop.
 */
export async function consumeTaskBulks(
  receiver: Pick<QueueReceiver, 'messages'>,
  intake: Intake,
  log: Logger,
): Promise<void> {
  const bad = new BadMessages(log);
  const describe =
    intake.describe === undefined ? undefined : (uid: string) => intake.describe!(uid);
  for await (const msg of receiver.messages()) {
    if (!msg.ok) {
      bad.report('undecodable message rejected', errorMeta(msg.error));
      continue;
    }
    if (!Array.isArray(msg.value)) {
      bad.report('message rejected: a task bulk must be an array', { type: typeof msg.value });
      continue;
    }
    const tasks: TaskRecord[] = [];
    const rejected: Notification[] = [];
    msg.value.forEach((item: unknown, i) => {
      const refused = intake.admit?.(item);
      if (refused !== undefined) {
        bad.report('task record refused', { component: intake.component, problem: refused });
        return;
      }
      const problem =
        describe === undefined
          ? check(item, intake.arrives)
          : checkHandBack(item, intake.arrives, describe);
      if (problem === undefined) return void tasks.push(item as TaskRecord);
      const text = `task record rejected by ${intake.component}: ${problem.replace(/^\//, `/${i}/`)}`;
      const uid = (item as { uid?: unknown } | null)?.uid;
      bad.report('invalid task rejected', { uid, problem: text });
      if (typeof uid !== 'string' || uid === '') return;
      const a = (item as { attempt?: unknown }).attempt;
      const attempt = typeof a === 'number' && Number.isInteger(a) && a > 0 ? a : 1;
      rejected.push(rejection(intake, uid, attempt, text));
    });
    handOver(intake, tasks, rejected, log);
  }
}

/** The FAILED notification of a task record a component refused on arrival. */
function rejection(intake: Intake, uid: string, attempt: number, text: string): Notification {
  return {
    kind: 'task',
    uid,
    attempt,
    state: 'FAILED',
    ts: intake.now(),
    component: intake.component,
    detail: { reason: reason('E_BAD_MESSAGE', text, intake.component) },
  };
}

/** Reports what was refused, then hands the rest to the component (whose errors are logged). */
function handOver(
  intake: Intake,
  tasks: TaskRecord[],
  rejected: Notification[],
  log: Logger,
): void {
  if (rejected.length > 0) intake.notify(rejected);
  if (tasks.length === 0) return;
  try {
    intake.handle(tasks);
  } catch (e) {
    log.error('handler failed on a task bulk', {
      ...errorMeta(e),
      uids: tasks.map((t) => t.uid),
    });
  }
}

/**
 * The same loop for a LocalQueue (a hop inside one process): the records were built and
 * checked by a component of this process, so only their state is checked on arrival.
 */
export function consumeLocalTasks(
  queue: LocalQueue<TaskRecord>,
  intake: Intake,
  log: Logger,
): void {
  queue.consume((items) => {
    const tasks: TaskRecord[] = [];
    const rejected: Notification[] = [];
    for (const t of items) {
      if (t.state === intake.arrives) {
        tasks.push(t);
        continue;
      }
      const text = `task record rejected by ${intake.component}: /state must be ${intake.arrives} here, not ${t.state}`;
      log.error('invalid task rejected', { uid: t.uid, problem: text });
      rejected.push(rejection(intake, t.uid, t.attempt, text));
    }
    handOver(intake, tasks, rejected, log);
  });
}

function check(item: unknown, arrives: string): string | undefined {
  try {
    const task = parseTaskRecord(item);
    return task.state === arrives ? undefined : `/state must be ${arrives} here, not ${task.state}`;
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    return issuesText(e.issues);
  }
}

/** check() for a hand-back, which then gets its description (see Intake.describe). */
function checkHandBack(
  item: unknown,
  arrives: string,
  describe: (uid: string) => TaskDescription | undefined,
): string | undefined {
  let back: HandBack;
  try {
    back = parseHandBack(item);
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    return issuesText(e.issues);
  }
  if (back.state !== arrives) return `/state must be ${arrives} here, not ${back.state}`;
  const description = describe(back.uid);
  if (description === undefined) return `/uid names no task this client holds: ${back.uid}`;
  (back as TaskRecord).description = description;
  return undefined;
}

/** Fire-and-forget send whose failure is logged, never thrown into a decision core. */
export function sendLogged(
  sender: Pick<QueueSender, 'send'>,
  value: unknown,
  log: Logger,
  what: string,
): void {
  sender.send(value).catch((e: unknown) => log.error(`${what}: send failed`, errorMeta(e)));
}
