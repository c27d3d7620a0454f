import type { TaskState } from '../generated';
import { FINALS, FINAL_STATES, isFinalState, linearModel } from './model';

export type { TaskState } from '../generated';

export const TASK_STATES = [
  'NEW',
  'TMGR_SCHEDULING_PENDING',
  'TMGR_SCHEDULING',
  'TMGR_STAGING_INPUT_PENDING',
  'TMGR_STAGING_INPUT',
  'AGENT_STAGING_INPUT_PENDING',
  'AGENT_STAGING_INPUT',
  'AGENT_SCHEDULING_PENDING',
  'AGENT_SCHEDULING',
  'AGENT_EXECUTING_PENDING',
  'AGENT_EXECUTING',
  'AGENT_STAGING_OUTPUT_PENDING',
  'AGENT_STAGING_OUTPUT',
  'TMGR_STAGING_OUTPUT_PENDING',
  'TMGR_STAGING_OUTPUT',
  'DONE',
  'FAILED',
  'CANCELED',
] as const satisfies readonly TaskState[];
export const FINAL_TASK_STATES = FINAL_STATES satisfies readonly TaskState[];
/** DONE, FAILED or CANCELED: a task's last word. */
export type FinalTaskState = (typeof FINAL_TASK_STATES)[number];
/** How a component ends the tasks it holds when it cannot finish them (shutdown, lost pilot). */
export type AbortedTaskState = Exclude<FinalTaskState, 'DONE'>;

/** True for DONE, FAILED and CANCELED. */
export function isFinalTaskState(state: TaskState): state is FinalTaskState {
  return isFinalState(state);
}

/** Component names, as they appear in notifications, logs and docs/state-model.md. */
export const COMPONENTS = {
  taskManager: 'TaskManager',
  managerScheduler: 'ManagerScheduler',
  managerInputStager: 'ManagerInputStager',
  agentInputStager: 'AgentInputStager',
  agentScheduler: 'AgentScheduler',
  executor: 'Executor',
  agentOutputStager: 'AgentOutputStager',
  managerOutputStager: 'ManagerOutputStager',
  pilotManager: 'PilotManager',
  pilotLauncher: 'PilotLauncher',
} as const;

/** A component that may hold a task (the pilot side's components are not among them). */
export type TaskComponent = Exclude<
  (typeof COMPONENTS)[keyof typeof COMPONENTS],
  'PilotManager' | 'PilotLauncher'
>;

const C = COMPONENTS;

/**
 * X_PENDING is set by the upstream component as it pushes a task into X's queue; X is set by
 * X's owner on receipt. A task in X_PENDING or X is held by X's owner, which alone may also
 * fail or cancel it. TMGR_STAGING_OUTPUT -> FAILED covers a non-zero exit after output staging.
 * AGENT_EXECUTING -> DONE (the Executor) is a service that was ready and served until its pilot
 * ended: the end of its work, not a failure, and there is no output staging left to do it.
 */
export const TASK_MODEL = linearModel<TaskState>(
  'task',
  [
    { state: 'NEW', holder: C.taskManager },
    { state: 'TMGR_SCHEDULING_PENDING', holder: C.managerScheduler },
    { state: 'TMGR_SCHEDULING', holder: C.managerScheduler },
    { state: 'TMGR_STAGING_INPUT_PENDING', holder: C.managerInputStager },
    { state: 'TMGR_STAGING_INPUT', holder: C.managerInputStager },
    { state: 'AGENT_STAGING_INPUT_PENDING', holder: C.agentInputStager },
    { state: 'AGENT_STAGING_INPUT', holder: C.agentInputStager },
    { state: 'AGENT_SCHEDULING_PENDING', holder: C.agentScheduler },
    { state: 'AGENT_SCHEDULING', holder: C.agentScheduler },
    { state: 'AGENT_EXECUTING_PENDING', holder: C.executor },
    { state: 'AGENT_EXECUTING', holder: C.executor },
    { state: 'AGENT_STAGING_OUTPUT_PENDING', holder: C.agentOutputStager },
    { state: 'AGENT_STAGING_OUTPUT', holder: C.agentOutputStager },
    { state: 'TMGR_STAGING_OUTPUT_PENDING', holder: C.managerOutputStager },
    { state: 'TMGR_STAGING_OUTPUT', holder: C.managerOutputStager },
  ],
  FINALS,
  [{ from: 'AGENT_EXECUTING', to: 'DONE', owner: C.executor }],
);

/** The state a retry (attempt + 1) starts again from. */
export const TASK_RETRY_STATE: TaskState = 'TMGR_SCHEDULING_PENDING';

/**
 * The holder of a task whose pilot has ended without returning it: the task's agent-side owner
 * is gone, so the client's TaskManager finalizes it (owner of last resort).
 */
export const TASK_RECOVERY_OWNER = C.taskManager;
