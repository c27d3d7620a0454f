import * as path from 'node:path';
import { TransferError } from '../errors';

/**
 * Why `p` is not a client path the file channel takes, or undefined: it must be absolute and
 * already in normal form (no `.`, `..`, `//` or trailing `/`), so that the path checked against
 * a task's grants is the path opened.
 */
export function pathProblem(p: string): string | undefined {
  if (p.includes('\0')) return 'has a NUL byte';
  if (!path.posix.isAbsolute(p)) return 'is not absolute';
  if (p === '/') return 'is the root directory';
  if (path.posix.normalize(p) !== p || p.endsWith('/')) {
    return `is not in normal form (${normalPath(p)})`;
  }
  return undefined;
}

/** `p` in the normal form the file channel takes (lexically: `..` is not resolved on disk). */
export function normalPath(p: string): string {
  const n = path.posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

/**
 * Runs a file operation of one end of the file channel; its error becomes a TransferError with
 * the errno and `file` (the caller's words for it, e.g. "client file /x").
 */
export async function fileOp<T>(
  what: 'read' | 'write',
  file: string,
  op: () => Promise<T>,
): Promise<T> {
  try {
    return await op();
  } catch (e) {
    if (e instanceof TransferError) throw e;
    const err = e as NodeJS.ErrnoException;
    const code = typeof err.code === 'string' ? err.code : 'E_TRANSFER';
    // Node's message is "ENOENT: no such file or directory, open '<path>'": keep the first part
    const text = String(err.message).split(', ')[0];
    throw new TransferError(code, `cannot ${what} ${file}: ${text}`, { cause: e });
  }
}
