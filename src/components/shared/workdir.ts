import type { TaskDescription } from '../../generated';

/** How a spawner helper's failure to make a task's directory begins (SpawnSpec.mkdir). */
export const TASK_DIR_FAILURE = 'cannot make the task directory';

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

/**
 * Whether a task's own directory is made by its spawner helper as it starts it (SpawnSpec.mkdir:
 * one mkdir where the task starts, none on the agent's loop), not by the AgentInputStager: an
 * executable or a service with no input directives (they are performed into it first). Function
 * calls run in warm workers: the stager makes theirs.
 */
export function madeAtSpawn(d: TaskDescription): boolean {
  return d.mode !== 'function' && (d.inputStaging?.length ?? 0) === 0;
}

/**
 * Whether a task's own directory is removed after it when it stayed empty: unless the task has
 * output directives (they stage from it) or said `sandbox: true` (keep it).
 */
export function removedWhenEmpty(d: TaskDescription): boolean {
  return d.sandbox !== true && (d.outputStaging?.length ?? 0) === 0;
}
