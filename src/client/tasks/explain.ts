import type { Explanation, WaitReason } from '../../generated';
import { requestOf } from '../../components/agent-scheduler/request';
import { dependencyMessage } from '../../components/manager-scheduler/wait-reasons';
import { TASK_MODEL, isFinalTaskState } from '../../states/task-model';
import type { Clock } from '../../lib/clock';
import type { AgentWaits, StartEstimate } from '../pilots/agent-waits';
import type { Task } from '../task';

/** Why a task is where it is (schemas/control-reply.schema.json, `definitions/Explanation`). */
export type { Explanation, WaitReason } from '../../generated';

/**
 * What an explanation reads of the session (its runtime is one): its tasks, and the holders it
 * asks why one waits, the ManagerScheduler through the pipeline and each pilot's agent through
 * what its links keep of the agent's reports.
 */
export interface ExplainSource {
  readonly tasks: { get(uid: string): Task | undefined };
  readonly clock: Clock;
  readonly pipeline: { whyWaiting(uid: string): WaitReason | undefined };
  readonly links: { readonly waits: Pick<AgentWaits, 'get' | 'estimate'> };
}

/** The explanation of a task of the session, or undefined for a uid it does not have. */
export function explainTask(rt: ExplainSource, uid: string): Explanation | undefined {
  const task = rt.tasks.get(uid);
  if (task === undefined) return undefined;
  const last = task.history.at(-1);
  const waiting = isFinalTaskState(task.state) ? undefined : waitingOf(rt, task);
  const est = waiting !== undefined ? estimateOf(rt, task) : undefined;
  return {
    uid,
    ...(task.description.name !== undefined ? { name: task.description.name } : {}),
    state: task.state,
    attempt: task.attempt,
    ...(task.pilot !== undefined ? { pilot: task.pilot } : {}),
    ...(last?.ts !== undefined ? { since: last.ts } : {}),
    ...(waiting !== undefined ? { waiting } : {}),
    ...(est !== undefined
      ? 'at' in est
        ? { estimatedStart: est.at }
        : { noEstimate: est.none }
      : {}),
    ...(task.reason !== undefined && task.state !== 'DONE' ? { reason: task.reason } : {}),
  };
}

/**
 * What a task that has not ended waits for, from its holder: the ManagerScheduler when it holds
 * it (asked now: its records run ahead of the delivered states), the AgentScheduler of its pilot
 * in AGENT_SCHEDULING (what the agent last reported for tasks asking the same), else, in an
 * X_PENDING state, in transit to X. A task being staged or run waits for nothing.
 */
function waitingOf(rt: ExplainSource, task: Task): WaitReason | undefined {
  const now = rt.clock.now();
  const held = rt.pipeline.whyWaiting(task.uid);
  if (held !== undefined) return withDependencyStates(rt, held);
  const holder = TASK_MODEL.holders[task.state] ?? 'the next component';
  if (task.state === 'AGENT_SCHEDULING' && task.pilot !== undefined) {
    const agent = agentReason(rt, task, task.pilot);
    if (agent !== undefined) return agent;
    const message = `with the ${holder} of ${task.pilot}: being placed (no reason reported yet)`;
    return { kind: 'queued', message, component: holder, ts: now };
  }
  if (atQuietAgent(task)) {
    // a function call's states at the agent are quiet: it may be there, waiting for a core
    const where = `at the agent of ${task.pilot} (a function call's states there are not published)`;
    const agent = agentReason(rt, task, task.pilot!);
    if (agent !== undefined) {
      return { ...agent, message: `in AGENT_SCHEDULING ${where}: ${agent.message}` };
    }
    const message =
      `handed to the agent of ${task.pilot}: in transit, being staged or placed ` +
      "(a function call's states there are not published; it reported no wait for it)";
    return { kind: 'queued', message, component: holder, ts: now };
  }
  if (task.state === 'NEW' || task.state === 'TMGR_SCHEDULING') {
    const message = `being handed on by the ${holder} (${task.state})`;
    return { kind: 'queued', message, component: holder, ts: now };
  }
  if (!task.state.endsWith('_PENDING')) return undefined;
  const message = `in transit: queued for the ${holder} (${task.state})`;
  return { kind: 'queued', message, component: holder, ts: now };
}

/**
 * The estimated start of a task waiting at its pilot's agent; a task the ManagerScheduler holds
 * has none yet (the plan is the agent's).
 */
function estimateOf(rt: ExplainSource, task: Task): StartEstimate | undefined {
  if ((task.state !== 'AGENT_SCHEDULING' && !atQuietAgent(task)) || task.pilot === undefined) {
    return rt.pipeline.whyWaiting(task.uid) !== undefined ? { none: NOT_AT_AGENT } : undefined;
  }
  const req = requestOf(task.description);
  if ('error' in req) return undefined;
  return rt.links.waits.estimate(task.pilot, req.key, task.uid, task.attempt);
}

/**
 * A function call the client last saw handed to its agent: its states there up to
 * AGENT_EXECUTING are quiet (QUIET_FUNCTION_STATES), so it may be in the agent's scheduler.
 */
function atQuietAgent(task: Task): boolean {
  return (
    task.description.mode === 'function' &&
    task.state === 'AGENT_STAGING_INPUT_PENDING' &&
    task.pilot !== undefined
  );
}

const NOT_AT_AGENT = "no estimate until it reaches a pilot's agent, whose plan gives it";

/** The agent's reason for the tasks asking what `task` asks, unless it names an older attempt. */
function agentReason(rt: ExplainSource, task: Task, pilot: string): WaitReason | undefined {
  const req = requestOf(task.description);
  if ('error' in req) return undefined;
  const said = rt.links.waits.get(pilot, req.key);
  if (said === undefined) return undefined;
  if (said.task === task.uid) return said.attempt === task.attempt ? said.reason : undefined;
  const message = `${said.reason.message} (behind ${said.task}, which asks the same)`;
  return { ...said.reason, message, ahead: said.task };
}

/** The dependencies' states as this client knows them, beside what the scheduler said. */
function withDependencyStates(rt: ExplainSource, w: WaitReason): WaitReason {
  if (w.dependencies === undefined) return w;
  const dependencies = w.dependencies.map((d) => {
    const state = rt.tasks.get(d.task)?.state;
    return state !== undefined ? { ...d, state } : d;
  });
  return { ...w, message: dependencyMessage(dependencies), dependencies };
}
