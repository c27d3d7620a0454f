import type { Reason } from '../../generated';
import type { AbortedTaskState } from '../../states/task-model';
import type { FinalPilotState } from '../../states/pilot-model';
import type { NoticeSignal } from '../../components/executor/effects';

/** The pilot's final state an agent's shutdown suggests. */
export type AgentFinal = FinalPilotState;

/** Why the agent shuts down; the first cause wins. */
export interface Shutdown {
  final: AgentFinal;
  message: string;
  /** The client, and the store it hosts, went away: no ack is waited for long. */
  storeGone: boolean;
  /**
   * The pilot's time is over (its end): tasks that never started go back to the client for
   * another pilot instead of ending here.
   */
  timeUp?: boolean;
}

/** What the tasks get before the pilot's end (PilotDescription.signalBeforeEnd). */
export interface SignalBeforeEnd {
  signal: NoticeSignal;
  seconds: number;
}

export type { NoticeSignal };

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
  /**
   * Ends every task the components hold with `final` and `why`; with `leaveToClient` (the
   * pilot's time is up) they are left to the client, which starts those that never ran again
   * elsewhere, and retries the others that have retries left (pilot-recovery.ts).
   */
  finalizeTasks(final: AbortedTaskState, why: Reason, leaveToClient: boolean): void;
  /**
   * The drain point: no task starts from now on; running ones get `signal` (if any). Returns
   * what it did, for the pilot's final message.
   */
  drain(signal: NoticeSignal | undefined): void;
  /** A line on what the end leaves: tasks returned, tasks killed, tasks signaled at the drain. */
  endSummary(): string;
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
