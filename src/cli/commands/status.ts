import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { SessionStatus } from '../../client/control/protocol';
import { parseControlReply } from '../../lib/validate';
import { EXIT, docPath } from '../args';
import { ask } from '../control-client';
import {
  ServerError,
  ServerUnreachableError,
  addServerOptions,
  exitOfServerError,
  requestJson,
  serverErrors,
  serverOf,
  usageFailure,
  wantsServer,
  type Server,
  type ServerFlags,
} from '../server-client';
import { DEFAULT_SESSIONS_DIR, resolveSessionDir } from '../session-dir';
import { statusOf } from '../session-info';
import { formatStatus, statusLine } from '../status-format';
import { usageErrors } from '../usage';

const EXIT_STATUS = `
exit status:
  0  the status was shown (with --watch: the session ended)
  1  pilotfish failed (message on stderr)
  2  wrong usage, or no such session (message on stderr)
  4  with --server: no server answers at the URL (message on stderr)

A live session answers through its control socket; an ended or crashed one is read from its
store; with --server, the service answers (GET /v1/status). The document --json prints:
${docPath('cli.md')}`;

interface StatusOptions extends ServerFlags {
  dir: string;
  json?: boolean;
  watch?: boolean;
  interval: number;
  pending: number;
}

/** `pilotfish status [SESSION]`: pilots, counts per state, running tasks, oldest pending. */
export function registerStatus(program: Command, done: (code: number) => void): void {
  const cmd = program
    .command('status')
    .summary("show a session's pilots and tasks (live or ended)")
    .description(
      'Shows the pilots, the tasks per state, the running tasks, and the oldest pending tasks ' +
        'with what they wait for. SESSION is a uid in --dir or a path (default: the newest).',
    )
    .argument('[session]', 'the session: its uid, or the path of its directory (not with --server)')
    .usage('[options] [session] | --server <url>')
    .option('--dir <sessions-dir>', 'where the sessions are', DEFAULT_SESSIONS_DIR)
    .option('--json', 'print one JSON document (with --watch: one per line, per change)')
    .option('--watch', 'keep showing it until the session ends')
    .option('--interval <seconds>', 'how often --watch looks', positive, 1)
    .option('--pending <n>', 'how many of the oldest pending tasks to show', count, 5)
    .addHelpText('after', EXIT_STATUS);
  addServerOptions(cmd).action(async (session: string | undefined, opts: StatusOptions) => {
    if (wantsServer(opts) && session !== undefined) {
      return done(usageFailure('status', 'a SESSION or --server (PILOTFISH_SERVER), not both'));
    }
    done(
      wantsServer(opts)
        ? await serverErrors(async () => remoteStatus(serverOf(opts)!, opts))
        : await usageErrors(() => status(resolveSessionDir(session, opts.dir), opts)),
    );
  });
}

async function status(dir: string, opts: StatusOptions): Promise<number> {
  const limits = { pending: opts.pending };
  if (opts.watch !== true) {
    show(await statusOf(dir, limits), opts);
    return EXIT.ok;
  }
  return watch(async () => {
    const reply = await ask(dir, { op: 'status', ...limits });
    // not live (any more): the store's last word, then done
    return reply?.ok === true ? reply.result : await statusOf(dir, limits);
  }, opts);
}

/** `status --server URL`: the service's GET /v1/status, once or (--watch) until it ends. */
async function remoteStatus(server: Server, opts: StatusOptions): Promise<number> {
  const get = async (): Promise<SessionStatus> => {
    const body = await requestJson<unknown>(server, 'GET', `/v1/status?pending=${opts.pending}`);
    // checked as the control socket's reply is, before it is believed
    const reply = parseControlReply('status', { ok: true, result: body });
    return (reply as { result: SessionStatus }).result;
  };
  if (opts.watch !== true) {
    show(await get(), opts);
    return EXIT.ok;
  }
  let seen = false;
  return watch(async () => {
    try {
      const st = await get();
      seen = true;
      return st;
    } catch (e) {
      // a service that answered and now is closing or gone has ended: its last word was shown
      const ended =
        e instanceof ServerUnreachableError ||
        (e instanceof ServerError && exitOfServerError(e) === EXIT.notLive);
      if (!seen || !ended) throw e;
      process.stderr.write(`pilotfish: the service at ${server.base} has stopped\n`);
      return undefined;
    }
  }, opts);
}

function show(st: SessionStatus, opts: StatusOptions): void {
  process.stdout.write(
    opts.json === true ? JSON.stringify(st) + '\n' : formatStatus(st, Date.now()),
  );
}

/** Shows `next()` every --interval until it is not live (or undefined: gone after closing). */
async function watch(
  next: () => Promise<SessionStatus | undefined>,
  opts: StatusOptions,
): Promise<number> {
  const tty = process.stdout.isTTY && opts.json !== true;
  let last = '';
  for (;;) {
    const st = await next();
    if (st === undefined) return EXIT.ok;
    if (tty) {
      process.stdout.write(`\x1b[H\x1b[2J${formatStatus(st, Date.now())}`);
    } else {
      const line = opts.json === true ? JSON.stringify(st) : statusLine(st);
      if (line !== last) {
        process.stdout.write(
          opts.json === true ? `${line}\n` : `${new Date().toISOString()} ${line}\n`,
        );
      }
      last = line;
    }
    if (st.state !== 'live' && st.state !== 'closing') return EXIT.ok;
    await new Promise((resolve) => setTimeout(resolve, opts.interval * 1000));
  }
}

function positive(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number above 0');
  return n;
}

function count(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 1000) {
    throw new InvalidArgumentError('must be a whole number from 0 to 1000');
  }
  return n;
}
