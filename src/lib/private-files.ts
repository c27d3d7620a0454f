import { chmodSync, mkdirSync, promises as fsp } from 'node:fs';

/**
 * Modes of everything a session writes: its owner's alone. Journals hold task descriptions
 * (with their environment, often secrets), agent configs will hold keys, and logs name the
 * session's addresses; a shared login node has other users one `ls` away.
 */
export const PRIVATE_DIR = 0o700;
export const PRIVATE_FILE = 0o600;
/** A file that must also run (a batch job script): still its owner's alone. */
export const PRIVATE_SCRIPT = 0o700;

/**
 * Makes a directory (and missing parents) its owner's alone. An existing directory is made so
 * too: the leaf is what holds the session's files.
 */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
  chmodSync(dir, PRIVATE_DIR);
}

/** makePrivateDir without blocking. */
export async function makePrivateDirAsync(dir: string): Promise<void> {
  await fsp.mkdir(dir, { recursive: true, mode: PRIVATE_DIR });
  await fsp.chmod(dir, PRIVATE_DIR);
}
