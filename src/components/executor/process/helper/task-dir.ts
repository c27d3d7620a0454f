/**
 * A task's own directory, made by its spawner helper at spawn (SpawnSpec.mkdir) so the agent
 * makes none on its loop: one mkdir, where the task is started, as pf-spawner.c does; and what
 * is wrong with a working directory a task cannot start in.
 */
import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
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

/** Why the task cannot start in `cwd`, in pf-spawner's words; undefined if it can. */
export function cwdProblem(cwd: string): { code: string; message: string } | undefined {
  try {
    if (!statSync(cwd).isDirectory()) {
      return {
        code: 'ENOTDIR',
        message: `cannot enter the working directory '${cwd}': ${errnoText('ENOTDIR', undefined)}`,
      };
    }
    accessSync(cwd, constants.X_OK);
    return undefined;
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'ENOENT') {
      return { code, message: `working directory '${cwd}' does not exist` };
    }
    return {
      code,
      message: `cannot enter the working directory '${cwd}': ${errnoText(code, e)}`,
    };
  }
}
