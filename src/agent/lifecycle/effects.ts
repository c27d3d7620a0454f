import type { Reason } from '../../generated';
import type { AbortedTaskState } from '../../states/task-model';
import type { FinalPilotState } from '../../states/pilot-model';

/** The pilot's final state an agent's shutdown suggests. */
export type AgentFinal = FinalPilotState;

/** Why the agent shuts down; the first cause wins. */
export interface Shutdown {
  final: AgentFinal;
  message: string;
  /** The client, and the store it hosts, went away: no ack is waited for long. */
  storeGone: boolean;
}

/** The steps of a shutdown; AgentLifecycleCore decides their order. */
export type ShutdownStep =
  | 'stopReceiving'
  | 'finalizeTasks'
  | 'closeSpawners'
  | 'flushNotifications'
  | 'closeSenders'
  | 'awaitUpdates'
  | 'closeWorkers'
  | 'closeQueues'
  | 'publishFinal'
  | 'closeControl';

/**
 * What AgentLifecycleCore may ask for. Each step method is named after its ShutdownStep and
 * reports its completion with `onStepDone(step)` (at once or later, success or not): the core
 * starts the next step only then.
 */
export interface AgentLifecycleEffects {
  /** Tells the client this agent is alive (every AGENT_HEARTBEAT_MS while it runs). */
  publishHeartbeat(): void;
  /** A shutdown begins (once); its steps follow. */
  shuttingDown(shutdown: Shutdown): void;
  /** Stops every intake: no task is taken any more. */
  stopReceiving(): void;
  /** Ends every task the components hold with `final` and `why`. */
  finalizeTasks(final: AbortedTaskState, why: Reason): void;
  /** Closes the spawner helpers (their processes die with them). */
  closeSpawners(): void;
  /** Sends the notifications gathered in this turn. */
  flushNotifications(): void;
  /** Flushes and closes the queue senders. */
  closeSenders(): void;
  /** Completes once the UpdateWorkers have pulled every notification sent; the core bounds it. */
  awaitUpdates(): void;
  /** Closes the UpdateWorkers, waiting `ackWaitMs` for acks (undefined: their default). */
  closeWorkers(ackWaitMs: number | undefined): void;
  /** Closes the queues. */
  closeQueues(): void;
  /** Tells the client the agent's end (agent_final); a failure to publish is no error. */
  publishFinal(final: AgentFinal, message: string): void;
  closeControl(): void;
  /** The shutdown is complete: the agent is done. */
  finished(final: AgentFinal, message: string): void;
}
