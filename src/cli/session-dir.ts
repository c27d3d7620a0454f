import { existsSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { isMongoUri } from '../updater/mongodb/uri';
import { UsageError } from '../errors';

/** Where sessions are made unless `--dir` says otherwise (as Session.open does). */
export const DEFAULT_SESSIONS_DIR = './.pilotfish';

/** Session directories are named by their uid: pf.YYYYMMDD.HHMMSS.xxxxxx. */
const SESSION_NAME = /^pf\.\d{8}\.\d{6}\.[0-9a-f]{6}$/;

/** The session directories under `sessionsDir`, newest first (by name: the uid starts with its time). */
export function listSessionDirs(sessionsDir: string): string[] {
  if (!existsSync(sessionsDir)) return [];
  return readdirSync(sessionsDir)
    .filter((n) => SESSION_NAME.test(n) && statSync(path.join(sessionsDir, n)).isDirectory())
    .sort()
    .reverse()
    .map((n) => path.resolve(sessionsDir, n));
}

/**
 * The directory of the session a command names: a uid in `sessionsDir`, a path to a session
 * directory, or (none given) the newest session in `sessionsDir`. Throws a UsageError saying
 * what was looked for.
 */
export function resolveSessionDir(arg: string | undefined, sessionsDir: string): string {
  if (arg === undefined) {
    const newest = listSessionDirs(sessionsDir)[0];
    if (newest === undefined) throw new UsageError(`no session in ${path.resolve(sessionsDir)}`);
    return newest;
  }
  const inDir = path.resolve(sessionsDir, arg);
  if (SESSION_NAME.test(arg) && existsSync(inDir)) return inDir;
  if (existsSync(path.join(arg, 'store.log')) || existsSync(path.join(arg, 'journal.jsonl'))) {
    return path.resolve(arg);
  }
  throw new UsageError(
    `no session '${arg}' (looked for ${inDir}, and for a session directory at ${path.resolve(arg)})`,
  );
}

/**
 * The directory of the session `run --resume` takes up: as resolveSessionDir finds it, or, for
 * a session named by its uid whose directory is not there, where a MongoDB store (`store`)
 * will have it made again from its database.
 */
export function resumedSessionDir(
  arg: string,
  sessionsDir: string,
  store: string | undefined,
): string {
  const inDir = path.resolve(sessionsDir, arg);
  const byUid = !arg.includes('/') && arg !== '.' && arg !== '..';
  if (store !== undefined && isMongoUri(store) && byUid && !existsSync(inDir)) return inDir;
  return resolveSessionDir(arg, sessionsDir);
}
