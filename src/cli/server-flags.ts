import { Option, type Command } from 'commander';
import { readFileSync } from 'node:fs';
import { UsageError } from '../errors';

// Where a command's server is (--server, --token-file, --ca) and its token: server-client.ts
// talks to it.

/** A server to talk to: its base URL (no trailing slash), token, and CA for https. */
export interface Server {
  base: string;
  token: string;
  ca?: Buffer;
  /** A Unix socket the server listens on (`--server unix:/path`, as `serve --socket` says). */
  socketPath?: string;
}

/** The options a command that can talk to a server takes (addServerOptions). */
export interface ServerFlags {
  server?: string;
  tokenFile?: string;
  ca?: string;
}

/** Adds --server, --token-file and --ca (with PILOTFISH_SERVER, PILOTFISH_CA) to a command. */
export function addServerOptions(cmd: Command): Command {
  return cmd
    .addOption(
      new Option(
        '--server <url>',
        'talk to a pilotfish serve at this URL (http://, https://, or unix:/path for --socket) instead of a session directory',
      ).env('PILOTFISH_SERVER'),
    )
    .option(
      '--token-file <file>',
      "with --server: the file holding the server's bearer token (or PILOTFISH_TOKEN: the token itself)",
    )
    .addOption(
      new Option(
        '--ca <file>',
        "with an https server: the CA certificate (PEM) its certificate is signed with (e.g. a self-signed one's own)",
      ).env('PILOTFISH_CA'),
    );
}

/** Whether the flags (or PILOTFISH_SERVER, which commander puts in them) name a server. */
export function wantsServer(flags: ServerFlags): boolean {
  return flags.server !== undefined && flags.server !== '';
}

/**
 * The server the flags name, or undefined when they name none. Throws a UsageError for a URL
 * that is not http(s), a missing or unreadable token, or an unreadable CA file.
 */
export function serverOf(
  flags: ServerFlags,
  env: NodeJS.ProcessEnv = process.env,
): Server | undefined {
  const raw = flags.server;
  if (raw === undefined || raw === '') return undefined;
  const socketPath = raw.startsWith('unix:') ? raw.slice('unix:'.length) : undefined;
  if (socketPath === '') throw new UsageError(`--server 'unix:' names no socket (unix:/path)`);
  let url: URL;
  try {
    url = new URL(socketPath !== undefined ? 'http://localhost' : raw);
  } catch {
    throw new UsageError(
      `--server '${raw}' is not a URL (http://HOST:PORT, https://... or unix:/path)`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`--server '${raw}': the URL must start with http:// or https://`);
  }
  let token: string | undefined;
  if (flags.tokenFile !== undefined) {
    try {
      token = readFileSync(flags.tokenFile, 'utf8').trim();
    } catch (e) {
      throw new UsageError(`--token-file ${flags.tokenFile}: ${(e as Error).message}`);
    }
    if (token === '') throw new UsageError(`--token-file ${flags.tokenFile} is empty`);
  } else if (env.PILOTFISH_TOKEN !== undefined && env.PILOTFISH_TOKEN.trim() !== '') {
    token = env.PILOTFISH_TOKEN.trim();
  }
  if (token === undefined) {
    throw new UsageError(
      "--server needs a token: --token-file FILE (e.g. the serve directory's admin.token), " +
        'or PILOTFISH_TOKEN set to the token itself',
    );
  }
  let ca: Buffer | undefined;
  if (flags.ca !== undefined && flags.ca !== '') {
    try {
      ca = readFileSync(flags.ca);
    } catch (e) {
      throw new UsageError(`--ca ${flags.ca}: ${(e as Error).message}`);
    }
  }
  if (socketPath !== undefined) return { base: raw, token, socketPath };
  const base = `${url.origin}${url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '')}`;
  return { base, token, ...(ca !== undefined ? { ca } : {}) };
}
