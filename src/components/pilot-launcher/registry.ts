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

/**
 * One launcher per `resource` of the pilot description schema (a test checks the keys
 * against the schema's enum; the mapped type makes a missing one a compile error).
 */
export const PILOT_LAUNCHERS: {
  readonly [R in Resource]: (ctx: LauncherContext) => PilotLauncher;
} = {
  local: (ctx) => new LocalLauncher(ctx.events, ctx.log),
  slurm: (ctx) =>
    new SlurmLauncher(ctx.events, ctx.log, ctx.pollMs !== undefined ? { pollMs: ctx.pollMs } : {}),
  pbs: (ctx) => new ScriptOnlyLauncher(ctx.events, { resource: 'pbs', name: 'PBS' }),
  lsf: (ctx) => new ScriptOnlyLauncher(ctx.events, { resource: 'lsf', name: 'LSF' }),
};
