import type { TaskRecord } from '../../generated';
import type { Given } from '../../components/manager-input-stager/shell';
import { ownCopy, type Interner } from '../../lib/strings';
import type { Notification, NotificationDetail } from '../../states/notification';
import { hopOf, sideOf } from '../../states/pipeline';
import { COMPONENTS, TASK_MODEL, type TaskState } from '../../states/task-model';
import type { Task } from '../task';
import { HANDED_BACK, recordOf } from '../pipeline/task-record';

/** Where a resumed session's unfinished tasks of one pilot are taken back (ManagerPipeline.adopt). */
export interface PilotPickUp {
  /** Held by the pilot's agent: the owner of last resort remembers them. */
  agent: Given[];
  /** Maybe lost on the way to the agent: sent again (the agent drops ones it already has). */
  toAgent: TaskRecord[];
}

/** A resumed session's plan for its unfinished tasks (see planPickUp). */
export interface PickUpPlan {
  /** Never left the client (or no pilot is known): scheduled again. */
  unsent: Task[];
  /** Taken back with their pilots. */
  byPilot: Map<string, PilotPickUp>;
  /** Handed back, maybe lost on the way, and the store told how they exited: staged out. */
  output: TaskRecord[];
  /**
   * Every task not staged out now: its hand-back may have gone to the dead client, so its
   * hand-back notification, whenever it comes, stands for it (ManagerPipeline.awaitHandBacks).
   */
  awaiting: Given[];
}

/**
 * Decides, from the states the replay rebuilt, where each unfinished task of a dead client is
 * picked up. Pure: the caller hands the plan to the pipeline.
 */
export function planPickUp(tasks: Iterable<Task>, session: string): PickUpPlan {
  const plan: PickUpPlan = { unsent: [], byPilot: new Map(), output: [], awaiting: [] };
  for (const task of tasks) {
    if (task.final) continue;
    let where = holderAtResume(task.state);
    // staged out again only when the store told how it exited (a hand-back notification
    // may still be on its way): else the agent's copy of the task is waited for
    if (where === 'output' && task.exitCode === undefined && task.signal === undefined) {
      where = 'agent';
    }
    if (where === 'output') {
      plan.output.push(recordOf(task, HANDED_BACK, session));
      continue;
    }
    plan.awaiting.push({ uid: task.uid, attempt: task.attempt });
    if (where === undefined || task.pilot === undefined) {
      plan.unsent.push(task);
      continue;
    }
    let p = plan.byPilot.get(task.pilot);
    if (p === undefined) plan.byPilot.set(task.pilot, (p = { agent: [], toAgent: [] }));
    if (where === 'agent') p.agent.push({ uid: task.uid, attempt: task.attempt });
    else p.toAgent.push(recordOf(task, hopOf(COMPONENTS.agentInputStager).arrives, session));
  }
  return plan;
}

/**
 * Where a task in a client-side record of a dead client is picked up again: held by its agent,
 * maybe lost on the way to it (`toAgent`: handed to the agent's first queue), or maybe lost on
 * the way back (`output`: held by the client's output stager); any other unfinished state has
 * not left the client and is scheduled again.
 */
function holderAtResume(state: TaskState): 'agent' | 'toAgent' | 'output' | undefined {
  if (state === hopOf(COMPONENTS.agentInputStager).arrives) return 'toAgent';
  if (sideOf(state) === 'agent') return 'agent';
  return TASK_MODEL.holders[state] === COMPONENTS.managerOutputStager ? 'output' : undefined;
}

/**
 * What a hand-back notification tells of how its task ended (its agent puts the exit, the
 * output tails and any reason in it: see AgentOutputStagerCore), or undefined for any other
 * notification (or one written before hand-backs carried it).
 */
export function handBackOf(n: Notification): NotificationDetail | undefined {
  if (n.state !== HANDED_BACK || n.detail?.exitCode === undefined) return undefined;
  return n.detail;
}

/**
 * Keeps on the task what its hand-back tells, when the tracker did not deliver the hand-back
 * (a later state of the task came first): a resumed client stages the task out from it.
 */
export function keepHandBack(task: Task, d: NotificationDetail): void {
  if (d.exitCode !== undefined) task.exitCode = d.exitCode;
  if (d.signal !== undefined) task.signal = d.signal;
  if (d.stdout !== undefined) task.stdout = ownCopy(d.stdout);
  if (d.result !== undefined) task.result = d.result;
  if (d.stderr !== undefined) task.stderr = ownCopy(d.stderr);
  keepOutputNotes(task, d);
  if (d.reason !== undefined) task.reason = d.reason;
}

/** What its output cap dropped and what a full disk lost, as its hand-back says. */
export function keepOutputNotes(task: Task, d: NotificationDetail): void {
  if (d.outputDropped !== undefined) task.outputDropped = d.outputDropped;
  if (d.outputLost !== undefined) task.outputLost = d.outputLost;
}

/**
 * A notification of the task's current attempt that came after a later state of it (its own
 * state was inferred, so its callback is gone): the facts it alone carries still count. The
 * retries used come only with an attempt's first state; without them a task lost with its
 * pilot, or resumed, would be granted retries it has used.
 */
export function keepLateFacts(
  task: Task,
  d: NotificationDetail,
  pilotUid: (raw: string) => string,
  sandboxDirs: Interner,
): void {
  if (d.retried !== undefined && d.retried > task.retried) task.retried = d.retried;
  if (d.pilot !== undefined && task.pilot === undefined) task.pilot = pilotUid(d.pilot);
  if (d.sandbox !== undefined && task.sandbox === undefined) {
    task.setSandbox(d.sandbox, sandboxDirs);
  }
  if (d.output !== undefined && task.output === undefined) task.output = d.output;
  const node = nodeOf(d);
  if (task.node === undefined && node !== undefined) task.node = sandboxDirs.get(node);
}

/** Where the task's attempt runs, as a notification says: its pilot, its (first rank's) node. */
export function keepPlace(
  task: Task,
  d: NotificationDetail,
  pilotUid: (raw: string) => string,
  dirs: Interner,
): void {
  if (d.pilot !== undefined) task.pilot = pilotUid(d.pilot);
  const node = nodeOf(d);
  if (node !== undefined) task.node = dirs.get(node);
}

/** The node a notification names: its first rank's slots, else the final state's `node`. */
function nodeOf(d: NotificationDetail): string | undefined {
  return d.slots?.[0]?.node ?? d.node;
}

/** A task starts its next attempt: what the last one left (exit, output, reason, place) goes. */
export function restartAttempt(task: Task): void {
  delete task.exitCode;
  delete task.signal;
  delete task.stdout;
  delete task.stderr;
  delete task.outputDropped;
  delete task.outputLost;
  delete task.result;
  delete task.reason;
  delete task.pilot;
  delete task.node;
  delete task.output;
}
