import type { FinalPilotState } from '../../states/pilot-model';
import type { AgentConfig, PilotDescription, Reason } from '../../generated';
import type { JobEnd } from './core';
import type { PilotRecord } from './pilot-record';

/** The resources a pilot description may name (the schema's `resource` enum). */
export type Resource = PilotDescription['resource'];

/** Cores and GPUs a pilot holds, as the ManagerScheduler counts them before its agent reports. */
export interface Capacity {
  cores: number;
  gpus: number;
}

/**
 * How a launched agent can be found again: a local agent's pid, a batch job's id. The shell
 * journals it, so a resumed client adopts the agent by it.
 */
export type AgentTrace = { pid: number } | { jobId: string };

/** How an agent process ended (a batch job's end is a JobEnd). */
export interface AgentExit {
  exitCode: number | null;
  signal: string | null;
  /** Tail of the agent's stderr. */
  stderr: string;
  /** What the agent left in its sandbox about its end (agent.end.json), if it did. */
  said?: { final: FinalPilotState; message: string } | undefined;
}

/** The file in a pilot's sandbox where its agent writes why it ends (AgentLifecycleShell). */
export const AGENT_END_FILE = 'agent.end.json';

/**
 * What a launcher reports, each later than the call that caused it (never from inside
 * `launch`): the shell (shell.ts) forwards each into PilotLauncherCore.
 */
export interface LaunchEvents {
  /** The agent runs (a pid), or its batch job was accepted and is queued (a job id). */
  launched(uid: string, trace: AgentTrace): void;
  /** The agent cannot start; `code` defaults to E_LAUNCH. */
  launchFailed(uid: string, error: { message: string; code?: Reason['code'] }): void;
  /** A batch job left the queue: the agent is starting on its nodes. */
  jobStarted(uid: string): void;
  /** A batch job ended, or can never start, or the batch system lost it. */
  jobEnded(uid: string, end: JobEnd): void;
  /** A local agent's process ended. */
  agentExited(uid: string, exit: AgentExit): void;
}

/**
 * Starts and stops the agents of one `resource`. One file per launcher, one line in
 * registry.ts; docs/architecture.md says how to add one. A launcher owns its processes,
 * files and timers and decides nothing about pilot states: PilotLauncherCore does.
 */
export interface PilotLauncher {
  /**
   * What each pilot holds before its agent reports in, in the order given (one call per
   * submitPilots bulk, so a resource is asked once per bulk, e.g. sinfo per partition).
   */
  capacities(descriptions: PilotDescription[]): Promise<Capacity[]>;
  /** The agent config this resource needs, from the one every resource shares. */
  agentConfig(pilot: PilotRecord, common: AgentConfig): AgentConfig;
  /** Starts the pilot's agent; the outcome comes back as `launched` or `launchFailed`. */
  launch(pilot: PilotRecord, config: AgentConfig): void;
  /** Kills the pilot's agent (or removes its job from the queue) outright. */
  kill(uid: string): void;
  /** Follows an agent a previous client of the session launched (a resumed session). */
  adopt(pilot: PilotRecord, trace: Partial<{ pid: number; jobId: string }>): void;
  /** Stops following every agent (the session is closing; its pilots have ended). */
  close(): void;
}
