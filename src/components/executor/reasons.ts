import type { Reason } from '../../generated';
import { COMPONENTS } from '../../states/task-model';

const EXECUTOR = COMPONENTS.executor;

export function cancelReason(when: string): Reason {
  return { code: 'E_CANCELED', message: `task was canceled ${when}`, component: EXECUTOR };
}

export function noSandboxReason(): Reason {
  return {
    code: 'E_NO_SANDBOX',
    message: 'task reached the Executor without a sandbox directory',
    component: EXECUTOR,
  };
}

/** A job of an agent that died (its agent was started again in the same allocation). */
export function agentDiedReason(): Reason {
  return {
    code: 'E_AGENT_DIED',
    message: 'the agent running the task died and was started again; the task died with it',
    component: EXECUTOR,
  };
}
