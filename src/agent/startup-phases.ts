import { performance } from 'node:perf_hooks';
import type { ControlMessage } from '../generated';

/** What agent_ready says of the agent's start (control-message.schema.json, startupMs). */
export type StartupMs = NonNullable<Extract<ControlMessage, { type: 'agent_ready' }>['startupMs']>;

/**
 * When each phase of this agent's start was done, in ms since its process started
 * (performance.now(): Node's start of the process is its origin), said once with agent_ready
 * so that a slow start shows where the time went (npm run bench -- e2e reports them).
 */
export class StartupPhases {
  private readonly marks: StartupMs = {};

  mark(phase: keyof StartupMs): void {
    this.marks[phase] ??= Math.round(performance.now() * 1000) / 1000;
  }

  get ms(): StartupMs {
    return { ...this.marks };
  }
}

/** This process's agent start (main.ts marks the first phases, the Agent the rest). */
export const agentStartup = new StartupPhases();
