import { existsSync, promises as fsp } from 'node:fs';
import * as path from 'node:path';
import type { SandboxRequest } from '../generated';

/** What a look into a sandbox asks, less what every request names. */
export type SandboxAsk = Omit<SandboxRequest, 'session' | 'pilot' | 'req'>;

/** The most a read asks for (schemas/sandbox-request.schema.json `length`). */
const MAX_READ_ASK = 1024 * 1024;

/** What an output reader needs of an open file: a node FileHandle is one. */
export interface ReadHandle {
  stat(): Promise<{ size: number }>;
  read(
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number }>;
  close(): Promise<void>;
}

/**
 * Where output readers (FileLines, StreamCursor, StreamLines, passStreamDir) read a pilot's
 * sandbox from: this machine's file system (localFiles), or the pilot's agent over its file
 * channel where the sandbox is not visible here (docs/output.md). `open` and `list` reject with
 * an error whose `code` is 'ENOENT' when the file or directory does not exist.
 */
export interface SandboxFiles {
  /** 'local' reads this machine's files; 'remote' asks the agent (nothing to fs.watch). */
  readonly kind: 'local' | 'remote';
  open(file: string): Promise<ReadHandle>;
  list(dir: string): Promise<string[]>;
  exists(file: string): Promise<boolean>;
}

export const localFiles: SandboxFiles = {
  kind: 'local',
  open: (file) => fsp.open(file, 'r'),
  list: (dir) => fsp.readdir(dir),
  exists: (file) => Promise.resolve(existsSync(file)),
};

/**
 * The file an agent writes in its sandbox at start, holding a random token: a client that
 * reads the same token at the same path as the agent sends it sees the agent's sandbox itself
 * (not an empty directory of the same name, nor another node's).
 */
export const SANDBOX_TOKEN = '.pf-sandbox-token';

/**
 * How to read the sandbox `sandbox` of a pilot: this machine's files when they are the
 * agent's (the token read through `remote` is the token read here), else `remote`; without an
 * answer from the agent (none, or it is gone), this machine's files where it sees the sandbox
 * (seenHere). Undefined when neither can read it.
 */
export async function chooseFiles(
  sandbox: string,
  remote: SandboxFiles | undefined,
): Promise<SandboxFiles | undefined> {
  const token = path.join(sandbox, SANDBOX_TOKEN);
  const theirs = remote === undefined ? undefined : await readSmall(remote, token);
  if (theirs === undefined) return (await seenHere(sandbox, token)) ? localFiles : undefined;
  const mine = await readSmall(localFiles, token);
  return mine === theirs ? localFiles : remote;
}

/**
 * Whether this machine sees the sandbox, with no agent to ask: its token is here, or it holds
 * anything (a sandbox of an agent before tokens). An empty directory is not it: a node-local
 * path that exists on this machine too, or a mount over it.
 */
async function seenHere(sandbox: string, token: string): Promise<boolean> {
  if (existsSync(token)) return true;
  try {
    return (await fsp.readdir(sandbox)).length > 0;
  } catch {
    return false;
  }
}

/** A small file's text through `files`; undefined when it cannot be read. */
async function readSmall(files: SandboxFiles, file: string): Promise<string | undefined> {
  let fh: ReadHandle | undefined;
  try {
    fh = await files.open(file);
    const buf = Buffer.alloc(256);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return bytesRead > 0 ? buf.subarray(0, bytesRead).toString('utf8') : undefined;
  } catch {
    return undefined;
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/** An error with an errno-like `code`, as node's fs rejects. */
export function codeError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** What a look into a sandbox found (what the agent replied). */
export interface SandboxLookResult {
  size?: number | undefined;
  names?: string[] | undefined;
  data?: Buffer | undefined;
}

/**
 * Output readers' files through `ask`: a look into a sandbox somewhere else (the agent's, by
 * the session's file channel or, for `pilotfish`, by the session's control socket). `ask`
 * rejects with an errno-like `code` (ENOENT for what is not there).
 */
export function remoteFiles(ask: (body: SandboxAsk) => Promise<SandboxLookResult>): SandboxFiles {
  const size = async (file: string): Promise<number> =>
    (await ask({ op: 'stat', path: file })).size ?? 0;
  return {
    kind: 'remote',
    async open(file): Promise<ReadHandle> {
      await size(file); // rejects ENOENT for a file that is not there
      return {
        stat: async () => ({ size: await size(file) }),
        async read(buffer, offset, length, position) {
          const want = Math.min(length, MAX_READ_ASK);
          const a = await ask({ op: 'read', path: file, offset: position, length: want });
          const data = a.data ?? Buffer.alloc(0);
          const n = Math.min(data.length, length);
          data.copy(buffer, offset, 0, n);
          return { bytesRead: n };
        },
        close: () => Promise.resolve(),
      };
    },
    list: async (dir) => (await ask({ op: 'list', path: dir })).names ?? [],
    async exists(file) {
      try {
        await size(file);
        return true;
      } catch (e) {
        const code = (e as { code?: unknown }).code;
        if (code === 'EISDIR') return true; // a directory: there, though not a file to read
        if (code === 'ENOENT') return false;
        throw e;
      }
    },
  };
}
