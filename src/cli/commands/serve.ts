import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { PilotDescription, RouterConfig } from '../../generated';
import { UsageError, ValidationError } from '../../errors';
import { makePrivateDir } from '../../lib/private-files';
import { parsePilotDescription } from '../../lib/validate';
import { startService } from '../../service/serve';
import { DEFAULT_RATE_PER_MINUTE } from '../../service/rate-limit';
import { ADMIN_TOKEN_FILE, SCOPES, TokenStore, type Scope } from '../../service/tokens';
import { EXIT, docPath, packageVersion } from '../args';
import { onInterrupt } from '../interrupt';

/** Where `pilotfish serve` keeps its session, tokens and serve.json unless --dir says. */
export const DEFAULT_SERVE_DIR = './.pilotfish-serve';

const EXIT_STATUS = `
exit status:
  0  stopped by SIGINT or SIGTERM: the pilots ended, the session closed
  1  pilotfish failed (message on stderr)
  2  wrong usage, a bad pilots file, or the directory is served already

Started again on the same --dir, it resumes the same session: no task lost or run twice.
The API and its tokens: ${docPath('service.md')}`;

interface ServeFlags {
  dir: string;
  host: string;
  port: string;
  pilots?: string;
  router?: string;
  socket?: string;
  tlsCert?: string;
  tlsKey?: string;
  insecureHttp?: boolean;
  rateLimit: string;
}

const say = (line: string): boolean => process.stderr.write(`pilotfish: ${line}\n`);

/** `pilotfish serve`: the jobs service; `pilotfish serve token add|list|revoke`. */
export function registerServe(program: Command, done: (code: number) => void): void {
  const serve = program
    .command('serve')
    .summary('keep a session open behind an HTTP API (the jobs service)')
    .description(
      'Opens a session (or, on a directory it served before, resumes it) with its pilots, ' +
        'and serves its HTTP API on loopback until stopped: submit and follow tasks from any ' +
        'program (curl, Python, a notebook). The first start makes an admin token in ' +
        `<dir>/${ADMIN_TOKEN_FILE}.`,
    )
    .option('--dir <dir>', "the service's directory", DEFAULT_SERVE_DIR)
    .option('--host <address>', 'the address to listen on', '127.0.0.1')
    .option('--port <port>', 'the port (0: a free one, named in <dir>/serve.json)', '8470')
    .option('--socket <path>', 'listen on this Unix socket (0600) instead of a TCP address')
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM; with --tls-key)')
    .option('--tls-key <file>', "the certificate's private key (PEM)")
    .option('--pilots <file>', 'a JSON list of pilot descriptions (default: one local pilot)')
    .option(
      '--router <file>',
      `a model router config (JSON: ${docPath('router.md')}): its OpenAI routes on the same address`,
    )
    .option('--insecure-http', 'allow an address other than loopback without TLS')
    .option(
      '--rate-limit <n>',
      'requests a minute per token, unless the token has its own (0: no limit)',
      String(DEFAULT_RATE_PER_MINUTE),
    )
    .addHelpText('after', EXIT_STATUS)
    .action(async (flags: ServeFlags) => done(await runServe(flags)));
  const token = serve.command('token').description("manage the service's bearer tokens");
  token
    .command('add')
    .description('make a token and print it (shown once)')
    .option('--scope <scopes>', `comma-separated: ${SCOPES.join(', ')}`, 'read')
    .option('--label <text>', 'who or what it is for')
    .option('--rate <n>', "this token's requests a minute (default: the service's --rate-limit)")
    .action((o: { scope: string; label?: string; rate?: string }) =>
      done(
        tokens(dirOf(serve), (s) => {
          const rate = o.rate === undefined ? undefined : Number(o.rate);
          process.stdout.write(`${s.add(o.scope.split(',') as Scope[], o.label, rate)}\n`);
        }),
      ),
    );
  token
    .command('list')
    .description('list the tokens: id, scopes, when made, own rate, label (never the tokens)')
    .action(() =>
      done(
        tokens(dirOf(serve), (s) => {
          for (const t of s.list()) {
            process.stdout.write(
              `${t.id}  ${t.scopes.join(',')}  ${t.created}  ${t.ratePerMinute !== undefined ? `${t.ratePerMinute}/min  ` : ''}${t.label ?? ''}\n`,
            );
          }
        }),
      ),
    );
  token
    .command('revoke')
    .description('revoke a token by its id (a running service stops taking it at once)')
    .argument('<id>', 'the id `token list` shows')
    .action((id: string) =>
      done(
        tokens(dirOf(serve), (s) => {
          if (!s.revoke(id)) throw new UsageError(`no token ${id} (pilotfish serve token list)`);
        }),
      ),
    );
}

/** `pilotfish serve [--dir DIR] token ...`: the directory is the serve command's option. */
function dirOf(serve: Command): string {
  return path.resolve(serve.opts<{ dir: string }>().dir);
}

function tokens(dir: string, act: (s: TokenStore) => void): number {
  try {
    makePrivateDir(dir);
    act(TokenStore.open(dir).store);
    return EXIT.ok;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    say(e.message);
    return EXIT.usage;
  }
}

function loadPilots(file: string): PilotDescription[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new UsageError(`cannot read the pilots file ${file}: ${(e as Error).message}`);
  }
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new UsageError(`${file}: a non-empty JSON list of pilot descriptions is expected`);
  }
  return raw.map((p, i) => {
    try {
      return parsePilotDescription(p);
    } catch (e) {
      if (e instanceof ValidationError) throw new UsageError(`${file}: pilot ${i}: ${e.message}`);
      throw e;
    }
  });
}

/** The router config of `file`, read (checked when the service starts: each path named). */
function loadRouter(file: string): RouterConfig {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as RouterConfig;
  } catch (e) {
    throw new UsageError(`cannot read the router file ${file}: ${(e as Error).message}`);
  }
}

async function runServe(flags: ServeFlags): Promise<number> {
  const port = Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    say(`serve: --port must be a port number (0-65535), got '${flags.port}'`);
    return EXIT.usage;
  }
  const rate = Number(flags.rateLimit);
  if (!Number.isInteger(rate) || rate < 0) {
    say(
      `serve: --rate-limit must be a whole number of requests a minute, got '${flags.rateLimit}'`,
    );
    return EXIT.usage;
  }
  if ((flags.tlsCert === undefined) !== (flags.tlsKey === undefined)) {
    say('serve: --tls-cert and --tls-key go together');
    return EXIT.usage;
  }
  let stopWith: ((signal: string) => void) | undefined;
  const stop = new Promise<string>((resolve) => (stopWith = resolve));
  const dispose = onInterrupt(
    (signal) => {
      say(`${signal}: stopping: the pilots end (again: leave at once; a new start resumes)`);
      stopWith?.(signal);
    },
    () => process.exit(EXIT.interrupted),
  );
  try {
    const service = await startService({
      dir: path.resolve(flags.dir),
      host: flags.host,
      port,
      ratePerMinute: rate,
      ...(flags.pilots !== undefined ? { pilots: loadPilots(flags.pilots) } : {}),
      ...(flags.router !== undefined ? { router: loadRouter(flags.router) } : {}),
      ...(flags.insecureHttp === true ? { insecureHttp: true } : {}),
      ...(flags.socket !== undefined ? { socket: path.resolve(flags.socket) } : {}),
      ...(flags.tlsCert !== undefined
        ? { tls: { cert: path.resolve(flags.tlsCert), key: path.resolve(flags.tlsKey!) } }
        : {}),
      version: packageVersion(),
    });
    const token = path.join(path.resolve(flags.dir), ADMIN_TOKEN_FILE);
    say(
      `serving session ${service.info.session} at ${service.info.url} (API under /v1; token: ${token})`,
    );
    if (service.info.url.startsWith('http')) {
      say(`dashboard: ${service.info.url}/dashboard/ (sign in with the token in ${token})`);
    }
    await stop;
    await service.stop();
    return EXIT.ok;
  } catch (e) {
    if (!(e instanceof UsageError || e instanceof ValidationError)) throw e;
    say(e.message);
    return EXIT.usage;
  } finally {
    dispose();
  }
}
