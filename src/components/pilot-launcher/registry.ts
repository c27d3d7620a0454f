import type { Logger } from '../../lib/logger';
import type { LaunchEvents, PilotLauncher, Resource } from './launcher';
import { LocalLauncher } from './local-launcher';
import { ScriptOnlyLauncher } from './script-only-launcher';
import { SlurmLauncher } from './slurm-launcher';

/** What a launcher is built with. */
export interface LauncherContext {
  events: LaunchEvents;
  log: Logger;
  /** Batch pilots: how often the job is polled when the description says nothing. */
  pollMs?: number;
}

/** A launcher factory for every resource: the mapped type makes a missing one a compile error. */
export type LauncherRegistry = {
  readonly [R in Resource]: (ctx: LauncherContext) => PilotLauncher;
};

/**
 * One launcher per `resource` of the pilot description schema (registry.test.ts checks the
 * keys against the schema's enum).
 */
export const PILOT_LAUNCHERS: LauncherRegistry = {
  local: (ctx) => new LocalLauncher(ctx.events, ctx.log),
  slurm: (ctx) =>
    new SlurmLauncher(ctx.events, ctx.log, ctx.pollMs !== undefined ? { pollMs: ctx.pollMs } : {}),
  pbs: (ctx) => new ScriptOnlyLauncher(ctx.events, { resource: 'pbs', name: 'PBS' }),
  lsf: (ctx) => new ScriptOnlyLauncher(ctx.events, { resource: 'lsf', name: 'LSF' }),
};
