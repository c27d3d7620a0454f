/**
 * How a system error is worded: the code as Node names it (ENOENT), and a short text, as the C
 * spawner helper words it too (pf-spawner.c's errno_text). The spawner helpers' reports, the
 * stagers and the spill queue use it. It imports nothing: the Node spawner helper's process
 * loads it (a fence in eslint.config.mjs keeps it so).
 */

const ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  ENOEXEC: 'not an executable format',
  ENOTDIR: 'a path component is not a directory',
  EISDIR: 'is a directory',
  E2BIG: 'argument list too long',
  EMFILE: 'too many open files',
  EAGAIN: 'too many processes',
  ENOMEM: 'out of memory',
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
};

/** The error's code (ENOENT, ...); EIO when it has none. */
export function errnoOf(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EIO';
}

/**
 * The text for `code`: ours for the common ones, else the description in a file system error's
 * message ("EBUSY: resource busy or locked, rmdir '/x'"), else the whole message.
 */
export function errnoText(code: string, e: unknown): string {
  const known = ERRNO_TEXT[code];
  if (known !== undefined) return known;
  const message = e instanceof Error ? e.message : String(e);
  return /^[A-Z0-9_]+: ([^,]+),/.exec(message)?.[1] ?? message;
}
