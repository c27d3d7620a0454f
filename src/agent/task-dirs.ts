import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { PRIVATE_DIR } from '../lib/private-files';

/** `$NAME` and `${NAME}` in `dir` from `env`; an unset or empty one is an error naming it. */
export function expandVars(
  dir: string,
  env: NodeJS.ProcessEnv,
): { dir: string } | { error: string } {
  let missing: string | undefined;
  const out = dir.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_, a, b) => {
      const name = (a ?? b) as string;
      const v = env[name];
      if (v === undefined || v === '') missing ??= name;
      return v ?? '';
    },
  );
  return missing === undefined ? { dir: out } : { error: `$${missing} is not set on this node` };
}

/**
 * Where this pilot's tasks get their own directories: `<taskDirs>/<session>/<pilot>` when the
 * pilot's agent.taskDirs names a directory (node-local storage, e.g. `$TMPDIR`), made here
 * (0700); else the pilot's sandbox. A pilot of more than one node keeps its sandbox (a task
 * started on another node would find no such directory there), as does one whose directory
 * cannot be made: `warn` says why, once.
 */
export function taskDirRoot(
  cfg: { taskDirs?: string; session: string; pilot: string; sandbox: string },
  nodes: number,
  env: NodeJS.ProcessEnv,
  warn: (message: string) => void,
): string {
  if (cfg.taskDirs === undefined) return cfg.sandbox;
  const fallback = (why: string): string => {
    warn(
      `agent.taskDirs '${cfg.taskDirs}' not used, tasks' directories are in the pilot's sandbox: ${why}`,
    );
    return cfg.sandbox;
  };
  if (nodes > 1) return fallback(`the pilot has ${nodes} nodes, and only this one would have them`);
  const expanded = expandVars(cfg.taskDirs, env);
  if ('error' in expanded) return fallback(expanded.error);
  if (!path.isAbsolute(expanded.dir)) return fallback(`'${expanded.dir}' is not an absolute path`);
  const root = path.join(expanded.dir, cfg.session, cfg.pilot);
  try {
    mkdirSync(root, { recursive: true, mode: PRIVATE_DIR });
    return root;
  } catch (e) {
    return fallback(`cannot make '${root}': ${(e as Error).message}`);
  }
}
