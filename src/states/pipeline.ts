import { TASK_MODEL, type TaskComponent, type TaskState } from './task-model';

/** Which process a component runs in: the user's client, or a pilot's agent. */
export type Side = 'client' | 'agent';

/** One component a task passes through, as the model defines it. */
export interface Hop {
  component: TaskComponent;
  /** The X_PENDING state its upstream sets as it hands a task over: what its intake accepts. */
  arrives: TaskState;
  /** The state it sets on receipt (X). */
  takes: TaskState;
  side: Side;
}

/** The process each component of the task model runs in. */
export const COMPONENT_SIDE: Readonly<Record<TaskComponent, Side>> = {
  TaskManager: 'client',
  ManagerScheduler: 'client',
  ManagerInputStager: 'client',
  AgentInputStager: 'agent',
  AgentScheduler: 'agent',
  Executor: 'agent',
  AgentOutputStager: 'agent',
  ManagerOutputStager: 'client',
};

/**
 * The queues of the task pipeline, in order: every component that holds a task in two states
 * (X_PENDING, X) has a queue whose intake accepts X_PENDING and sets X. Both the client and the
 * agent build their queues and intakes from this table, never from state literals.
 */
export const PIPELINE: readonly Hop[] = (() => {
  const hops: Hop[] = [];
  const states = TASK_MODEL.states.filter((s) => TASK_MODEL.holders[s] !== undefined);
  for (let i = 0; i + 1 < states.length; i++) {
    const arrives = states[i]!;
    const takes = states[i + 1]!;
    const component = TASK_MODEL.holders[arrives] as TaskComponent;
    if (TASK_MODEL.holders[takes] !== component) continue;
    if (hops.some((h) => h.component === component)) continue;
    hops.push({ component, arrives, takes, side: COMPONENT_SIDE[component] });
  }
  return hops;
})();

/** The hop of one component (throws for a component that has no queue: the TaskManager). */
export function hopOf(component: TaskComponent): Hop {
  const hop = PIPELINE.find((h) => h.component === component);
  if (hop === undefined) throw new Error(`component ${component} has no queue in the pipeline`);
  return hop;
}

/** The side that holds a task in `state` (undefined for a final state: nobody holds it). */
export function sideOf(state: TaskState): Side | undefined {
  const holder = TASK_MODEL.holders[state] as TaskComponent | undefined;
  return holder === undefined ? undefined : COMPONENT_SIDE[holder];
}
