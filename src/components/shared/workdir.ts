import type { TaskDescription } from '../../generated';

/** The `workdir` that names the pilot's sandbox (a name, not a path). */
export const PILOT_WORKDIR = 'pilot';

/**
 * Whether a task asks for a working directory other than its own: `workdir` ('pilot' or a
 * path), or `sandbox: false` (the pilot's sandbox).
 */
export function sharesWorkdir(d: TaskDescription): boolean {
  return d.workdir !== undefined || d.sandbox === false;
}

/**
 * The directory a task runs in: its `workdir` ('pilot': the pilot's sandbox), the pilot's
 * sandbox for `sandbox: false`, else its own directory (`sandbox`, the record's).
 */
export function workdirOf(d: TaskDescription, sandbox: string, pilotSandbox: string): string {
  if (d.workdir === PILOT_WORKDIR) return pilotSandbox;
  if (d.workdir !== undefined) return d.workdir;
  return d.sandbox === false ? pilotSandbox : sandbox;
}
