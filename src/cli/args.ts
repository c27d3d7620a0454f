import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

/**
 * Exit statuses of `pilotfish`; the help and docs/cli.md list them. A run stopped by a signal
 * exits as a shell reports a command a signal ended: 128 + its number.
 */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  timeout: 3,
  /** The command needs a live session and no client answers its control socket. */
  notLive: 4,
  /** `run` stopped by SIGINT (Ctrl-C), or SIGTERM. */
  interrupted: 130,
  terminated: 143,
} as const;

/** The folder and version of pilotfish's package.json, found from this file (in dist/ or src/). */
function ownPackage(from: string): { dir: string; version: string } {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'pilotfish' && pkg.version !== undefined) {
        return { dir, version: pkg.version };
      }
    }
    if (path.dirname(dir) === dir) throw new Error(`no package.json of pilotfish above ${from}`);
  }
}

/** The version in pilotfish's package.json, found from this file (in dist/ or src/, installed or not). */
export function packageVersion(from: string = __dirname): string {
  return ownPackage(from).version;
}

/**
 * The absolute path of a user doc (`docs/<name>`, shipped in the package), for help texts: it
 * names the file where pilotfish is, installed under node_modules or a checkout.
 */
export function docPath(name: string, from: string = __dirname): string {
  return path.join(ownPackage(from).dir, 'docs', name);
}
