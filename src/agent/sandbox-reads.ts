import { randomBytes } from 'node:crypto';
import { constants, promises as fsp, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { SandboxReply, SandboxRequest } from '../generated';
import { coerceError } from '../errors';
import { codeError, SANDBOX_TOKEN } from '../lib/sandbox-files';

/** The most bytes one read reply carries (more than a stream reader's chunk, STREAM_CHUNK). */
export const MAX_SANDBOX_READ_BYTES = 1024 * 1024;
/** The most names one list reply carries (a pilot's stream directory holds a few). */
export const MAX_SANDBOX_NAMES = 10_000;

/**
 * Why the client path `p` may not be read in `sandbox` (absolute and normalized), or undefined:
 * it must be absolute, in normal form (no `.`, `..`, `//`, trailing `/`) and the sandbox itself
 * or inside it. Pure: symlinks are the caller's (confine).
 */
export function pathOutside(sandbox: string, p: string): string | undefined {
  if (!path.posix.isAbsolute(p)) return 'is not absolute';
  if (p.includes('\0')) return 'holds a NUL byte';
  if (p.split('/').some((s) => s === '..' || s === '.')) return "holds '.' or '..'";
  if (path.posix.normalize(p) !== p || (p.length > 1 && p.endsWith('/'))) {
    return 'is not in normal form';
  }
  if (p !== sandbox && !p.startsWith(sandbox === '/' ? '/' : `${sandbox}/`)) {
    return `is outside the sandbox ${sandbox}`;
  }
  return undefined;
}

/**
 * `p` with its symlinks resolved, once it is known to stay inside `sandbox` (resolved too):
 * a link that leads out of the sandbox is refused (EACCES) like a path outside it. Rejects
 * ENOENT for a path that does not exist.
 */
export async function confine(sandbox: string, p: string): Promise<string> {
  const problem = pathOutside(sandbox, p);
  if (problem !== undefined) throw codeError('EACCES', `path '${p}' ${problem}`);
  const root = await fsp.realpath(sandbox);
  const real = await fsp.realpath(p);
  if (real !== root && !real.startsWith(root === '/' ? '/' : `${root}/`)) {
    throw codeError('EACCES', `path '${p}' leads out of the sandbox ${sandbox} (to ${real})`);
  }
  return real;
}

/**
 * Writes the sandbox's token file (SANDBOX_TOKEN, a fresh random token, 0600) so that a client
 * can tell whether it sees this sandbox itself. Returns an error message when it cannot.
 */
export function writeSandboxToken(sandbox: string): string | undefined {
  try {
    writeFileSync(path.join(sandbox, SANDBOX_TOKEN), randomBytes(16).toString('hex'), {
      mode: 0o600,
    });
    return undefined;
  } catch (e) {
    return coerceError(e).message;
  }
}

export type SandboxAnswer = { header: SandboxReply; data?: Buffer };

/**
 * The agent's answers to the client's looks into its sandbox (SandboxRequest): read-only, inside
 * `sandbox` alone (confine), regular files and directories only, a bounded number of bytes or
 * names per reply. Never throws: every outcome is a reply.
 */
export class SandboxReads {
  private readonly sandbox: string;

  constructor(
    sandbox: string,
    private readonly session: string,
    private readonly pilot: string,
  ) {
    this.sandbox = path.resolve(sandbox);
  }

  async answer(req: SandboxRequest): Promise<SandboxAnswer> {
    const base = { req: req.req, session: this.session, pilot: this.pilot };
    try {
      if (req.session !== this.session || req.pilot !== this.pilot) {
        throw codeError('EACCES', `names session '${req.session}', pilot '${req.pilot}'`);
      }
      const real = await confine(this.sandbox, req.path);
      if (req.op === 'list') return { header: { ...base, ok: true, names: await list(real) } };
      // O_NOFOLLOW: a link put in place since confine() is not followed
      const fh = await fsp.open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        const st = await fh.stat();
        if (!st.isFile()) throw codeError('EISDIR', `'${req.path}' is not a regular file`);
        if (req.op === 'stat') return { header: { ...base, ok: true, size: st.size } };
        const offset = req.offset ?? 0;
        const want = Math.min(req.length ?? MAX_SANDBOX_READ_BYTES, MAX_SANDBOX_READ_BYTES);
        const len = Math.max(0, Math.min(want, st.size - offset));
        const data = Buffer.allocUnsafe(len);
        const { bytesRead } = len > 0 ? await fh.read(data, 0, len, offset) : { bytesRead: 0 };
        return { header: { ...base, ok: true, size: st.size }, data: data.subarray(0, bytesRead) };
      } finally {
        await fh.close();
      }
    } catch (e) {
      const err = coerceError(e);
      // from the error itself: fs errors of another realm (a test's) are not `instanceof Error`
      const code = (e as { code?: unknown } | null)?.code;
      return {
        header: {
          ...base,
          ok: false,
          error: { code: typeof code === 'string' ? code : 'E_TRANSFER', message: err.message },
        },
      };
    }
  }
}

async function list(dir: string): Promise<string[]> {
  const names = await fsp.readdir(dir);
  if (names.length > MAX_SANDBOX_NAMES) {
    throw codeError(
      'E2BIG',
      `${dir} holds ${names.length} entries, more than ${MAX_SANDBOX_NAMES}`,
    );
  }
  return names;
}
