/**
 * A task's own directory, made by its spawner helper at spawn (SpawnSpec.mkdir) so the agent
 * makes none on its loop: one mkdir, where the task is started, as pf-spawner.c does.
 */
import { mkdirSync } from 'node:fs';
import { errnoOf, errnoText } from '../../../../lib/errno-text';

/** Its owner's alone, as every directory of a session. */
const DIR_MODE = 0o700;

/** Makes `dir` unless it exists (its parent must); the failure to report, else undefined. */
export function makeTaskDir(dir: string): { code: string; message: string } | undefined {
  try {
    mkdirSync(dir, { mode: DIR_MODE });
    return undefined;
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'EEXIST') return undefined;
    return { code, message: `cannot make the task directory '${dir}': ${errnoText(code, e)}` };
  }
}
