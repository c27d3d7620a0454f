import { performance } from 'node:perf_hooks';
import type { AgentStartup } from '../generated/control-message';

/**
 * When each phase of this agent's start was done, in ms since its process started
 * (performance.now(): Node's start of the process is its origin), said once with agent_ready
 * so that a slow start shows where the time went (npm run bench -- e2e reports them).
 */
export class StartupPhases {
  private readonly marks: AgentStartup = {};

  mark(phase: keyof AgentStartup): void {
    this.marks[phase] ??= Math.round(performance.now() * 1000) / 1000;
  }

  get ms(): AgentStartup {
    return { ...this.marks };
  }
}

/** This process's agent start (main.ts marks the first phases, the Agent the rest). */
export const agentStartup = new StartupPhases();
