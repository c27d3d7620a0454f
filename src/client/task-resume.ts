import type { TaskRecord } from '../generated';
import type { Given } from '../components/manager-input-stager/shell';
import { hopOf, sideOf } from '../states/pipeline';
import { COMPONENTS, TASK_MODEL, type TaskState } from '../states/task-model';
import type { Task } from './task';

/** Where a resumed session's unfinished tasks of one pilot are taken back (ManagerPipeline.adopt). */
export interface PilotPickUp {
  /** Held by the pilot's agent: the owner of last resort remembers them. */
  agent: Given[];
  /** Maybe lost on the way to the agent: sent again (the agent drops ones it already has). */
  toAgent: TaskRecord[];
  /** Maybe lost on the way back: staged out again. */
  output: TaskRecord[];
}

/**
 * Decides, from the states the replay rebuilt, where each unfinished task of a dead client is
 * picked up: with its pilot (see PilotPickUp), or scheduled again when it never left the
 * client. Pure: the caller hands the plan to the pipeline.
 */
export function planPickUp(
  tasks: Iterable<Task>,
  session: string,
): { unsent: Task[]; byPilot: Map<string, PilotPickUp> } {
  const unsent: Task[] = [];
  const byPilot = new Map<string, PilotPickUp>();
  for (const task of tasks) {
    if (task.final) continue;
    let where = holderAtResume(task.state);
    // staged out again only when the store told how it exited (a hand-back notification
    // may still be on its way): else the agent's copy of the task is waited for
    if (where === 'output' && task.exitCode === undefined && task.signal === undefined) {
      where = 'agent';
    }
    if (where === undefined || task.pilot === undefined) {
      unsent.push(task);
      continue;
    }
    let p = byPilot.get(task.pilot);
    if (p === undefined) byPilot.set(task.pilot, (p = { agent: [], toAgent: [], output: [] }));
    if (where === 'agent') p.agent.push({ uid: task.uid, attempt: task.attempt });
    else {
      const to = where === 'toAgent' ? COMPONENTS.agentInputStager : COMPONENTS.managerOutputStager;
      p[where].push(recordOf(task, hopOf(to).arrives, session));
    }
  }
  return { unsent, byPilot };
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

/** The record a component needs to take a task back in `state`. */
function recordOf(task: Task, state: TaskState, session: string): TaskRecord {
  const rec: TaskRecord = {
    uid: task.uid,
    attempt: task.attempt,
    state,
    session,
    description: task.description,
  };
  if (task.pilot !== undefined) rec.pilot = task.pilot;
  if (task.sandbox !== undefined) rec.sandbox = task.sandbox;
  if (task.exitCode !== undefined) rec.exitCode = task.exitCode;
  if (task.signal !== undefined) rec.signal = task.signal;
  if (task.stdout !== undefined) rec.stdout = task.stdout;
  if (task.stderr !== undefined) rec.stderr = task.stderr;
  return rec;
}
