import type { Command } from 'commander';
import { EXIT } from '../args';
import { ask } from '../control-client';
import { DEFAULT_SESSIONS_DIR, resolveSessionDir } from '../session-dir';
import { usageErrors } from '../usage';

const EXIT_STATUS = `
exit status:
  0  every task named was canceled (it ends CANCELED, or in the final state it reached first)
  1  some uid is not a task of the session, or its task had already ended (the others were
     canceled); or pilotfish failed (message on stderr)
  2  wrong usage, or no such session (message on stderr)
  4  the session is not live: no client answers its control socket (ended, or its client died)`;

/** `pilotfish cancel SESSION UID...`: cancels tasks of a live session, as tmgr.cancelTasks does. */
export function registerCancel(program: Command, done: (code: number) => void): void {
  program
    .command('cancel')
    .summary('cancel tasks of a live session')
    .description(
      'Cancels tasks of a live session through its control socket, as tmgr.cancelTasks does: ' +
        'a task ends CANCELED (its command is killed if it runs), or in the final state it ' +
        'reaches first.',
    )
    .argument('<session>', 'the session: its uid, or the path of its directory')
    .argument('<uid...>', 'the tasks to cancel')
    .option('--dir <sessions-dir>', 'where the sessions are', DEFAULT_SESSIONS_DIR)
    .option('--json', 'print one JSON document: {canceled, unknown, final}')
    .addHelpText('after', EXIT_STATUS)
    .action(async (session: string, uids: string[], opts: { dir: string; json?: boolean }) =>
      done(await usageErrors(() => cancel(resolveSessionDir(session, opts.dir), uids, opts))),
    );
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
  const r = reply.result;
  if (opts.json === true) process.stdout.write(JSON.stringify(r) + '\n');
  else {
    if (r.canceled.length > 0) process.stdout.write(`canceled: ${r.canceled.join(' ')}\n`);
    if (r.final.length > 0) process.stdout.write(`already ended: ${r.final.join(' ')}\n`);
    if (r.unknown.length > 0) process.stdout.write(`no such task: ${r.unknown.join(' ')}\n`);
  }
  return r.unknown.length + r.final.length > 0 ? EXIT.failed : EXIT.ok;
}
