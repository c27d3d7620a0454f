import type { Command } from 'commander';
import type { CancelResult } from '../../client/control/protocol';
import { UsageError } from '../../errors';
import { EXIT } from '../args';
import { ask } from '../control-client';
import {
  ServerError,
  addServerOptions,
  requestJson,
  serverErrors,
  serverOf,
  taskRoute,
  usageFailure,
  wantsServer,
  type Server,
  type ServerFlags,
} from '../server-client';
import { DEFAULT_SESSIONS_DIR, resolveSessionDir } from '../session-dir';
import { usageErrors } from '../usage';

const EXIT_STATUS = `
exit status:
  0  every task named was canceled (it ends CANCELED, or in the final state it reached first)
  1  some uid is not a task of the session, or its task had already ended (the others were
     canceled); or pilotfish failed (message on stderr)
  2  wrong usage, or no such session (message on stderr)
  4  the session is not live: no client answers its control socket (ended, or its client died);
     with --server: no server answers at the URL, or the service is closing

With --server URL, no SESSION is given: every argument is a task of the service.`;

interface CancelFlags extends ServerFlags {
  dir: string;
  json?: boolean;
}

/** `pilotfish cancel SESSION UID...`: cancels tasks of a live session, as tmgr.cancelTasks does. */
export function registerCancel(program: Command, done: (code: number) => void): void {
  const cmd = program
    .command('cancel')
    .summary('cancel tasks of a live session')
    .description(
      'Cancels tasks of a live session through its control socket, as tmgr.cancelTasks does: ' +
        'a task ends CANCELED (its command is killed if it runs), or in the final state it ' +
        'reaches first.',
    )
    .argument('[session]', 'the session: its uid, or the path of its directory (not with --server)')
    .argument('[uid...]', 'the tasks to cancel')
    .usage('[options] <session> <uid...> | --server <url> <uid...>')
    .option('--dir <sessions-dir>', 'where the sessions are', DEFAULT_SESSIONS_DIR)
    .option('--json', 'print one JSON document: {canceled, unknown, final}');
  addServerOptions(cmd)
    .addHelpText('after', EXIT_STATUS)
    .action(async (session: string | undefined, uids: string[], opts: CancelFlags) => {
      if (wantsServer(opts)) {
        if (session === undefined) return done(usageFailure('cancel', "missing argument 'uid'"));
        if (looksLikeSession(session, opts.dir)) {
          return done(usageFailure('cancel', 'a SESSION or --server (PILOTFISH_SERVER), not both'));
        }
        const all = [session, ...uids];
        return done(await serverErrors(async () => remoteCancel(serverOf(opts)!, all, opts)));
      }
      if (session === undefined || uids.length === 0) {
        const what = session === undefined ? 'SESSION and UIDs' : 'the UIDs to cancel';
        return done(usageFailure('cancel', `missing ${what} (or --server URL and the UIDs)`));
      }
      done(await usageErrors(() => cancel(resolveSessionDir(session, opts.dir), uids, opts)));
    });
}

async function cancel(dir: string, uids: string[], opts: { json?: boolean }): Promise<number> {
  const reply = await ask(dir, { op: 'cancel', uids: uids as [string, ...string[]] });
  if (reply === undefined) {
    process.stderr.write(`pilotfish: session ${dir} is not live: nothing to cancel\n`);
    return EXIT.notLive;
  }
  if (!reply.ok) {
    process.stderr.write(`pilotfish: ${reply.error.code}: ${reply.error.message}\n`);
    return reply.error.code === 'E_CLOSING' ? EXIT.notLive : EXIT.failed;
  }
  return report(reply.result, opts);
}

/** `cancel --server URL UID...`: POST /v1/tasks/{uid}/cancel for each, told as the local one. */
async function remoteCancel(
  server: Server,
  uids: string[],
  opts: { json?: boolean },
): Promise<number> {
  const r: CancelResult = { canceled: [], unknown: [], final: [] };
  for (const uid of uids) {
    try {
      const got = await requestJson<{ canceled?: boolean; alreadyFinal?: boolean }>(
        server,
        'POST',
        taskRoute(uid, '/cancel'),
      );
      (got.alreadyFinal === true ? r.final : r.canceled).push(uid);
    } catch (e) {
      if (!(e instanceof ServerError) || e.code !== 'E_NOT_FOUND') throw e;
      r.unknown.push(uid);
    }
  }
  return report(r, opts);
}

function report(r: CancelResult, opts: { json?: boolean }): number {
  if (opts.json === true) process.stdout.write(JSON.stringify(r) + '\n');
  else {
    if (r.canceled.length > 0) process.stdout.write(`canceled: ${r.canceled.join(' ')}\n`);
    if (r.final.length > 0) process.stdout.write(`already ended: ${r.final.join(' ')}\n`);
    if (r.unknown.length > 0) process.stdout.write(`no such task: ${r.unknown.join(' ')}\n`);
  }
  return r.unknown.length + r.final.length > 0 ? EXIT.failed : EXIT.ok;
}

/** A session uid: pf.YYYYMMDD.HHMMSS.xxxxxx. */
const SESSION_UID = /^pf\.\d{8}\.\d{6}\.[0-9a-f]{6}$/;

/**
 * Whether a command's first argument names a session (its uid, or a session directory here),
 * where with --server it would be taken for a task's uid: a usage error, not a cancel.
 */
export function looksLikeSession(arg: string, sessionsDir: string): boolean {
  if (SESSION_UID.test(arg)) return true;
  try {
    resolveSessionDir(arg, sessionsDir);
    return true;
  } catch (e) {
    if (e instanceof UsageError) return false;
    throw e;
  }
}
