import type { Command } from 'commander';
import { silentLogger } from '../../lib/logger';
import { EXIT, docPath } from '../args';
import { serveStoreDashboard } from '../dashboard/server';
import { onInterrupt } from '../interrupt';
import { DEFAULT_SESSIONS_DIR, resolveSessionDir } from '../session-dir';
import { usageErrors } from '../usage';

const EXIT_STATUS = `
exit status:
  0  stopped by SIGINT or SIGTERM
  1  the session could not be read, or the port not listened on (the message is on stderr)
  2  wrong usage, or no such session (the message is on stderr)

What each view shows: ${docPath('dashboard.md')}`;

/**
 * `pilotfish dashboard [SESSION]`: the dashboard of a session no `pilotfish serve` holds (a
 * script's, live or ended), read-only from its store, on loopback until stopped.
 */
export function registerDashboard(program: Command, done: (code: number) => void): void {
  program
    .command('dashboard')
    .summary("serve a session's dashboard, read-only from its store, on loopback")
    .description(
      'Serves the web dashboard of a session that a script runs or that ended (a session that ' +
        '`pilotfish serve` holds has its own, at /dashboard/): its pilots, tasks by state, ' +
        'the table of its tasks, each task with its history and output, its timeline. ' +
        'Read-only: nothing can be canceled from it. Prints the address with a token made ' +
        'for this run; open it in a browser on this machine (or through an SSH tunnel).',
    )
    .argument('[session]', 'a session uid in --dir, or a session directory (default: the newest)')
    .option('--dir <sessions-dir>', 'where the sessions are', DEFAULT_SESSIONS_DIR)
    .option('--port <port>', 'the port on 127.0.0.1 (0: a free one)', '0')
    .addHelpText('after', EXIT_STATUS)
    .action(async (session: string | undefined, opts: { dir: string; port: string }) =>
      done(await usageErrors(() => dashboard(session, opts))),
    );
}

async function dashboard(
  session: string | undefined,
  opts: { dir: string; port: string },
): Promise<number> {
  const port = Number(opts.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`pilotfish dashboard: --port must be 0-65535, got '${opts.port}'\n`);
    return EXIT.usage;
  }
  const dir = resolveSessionDir(session, opts.dir); // a UsageError: exit 2 (usageErrors)
  let stopWith: (() => void) | undefined;
  const stop = new Promise<void>((resolve) => (stopWith = resolve));
  const dispose = onInterrupt(
    () => stopWith?.(),
    () => process.exit(EXIT.interrupted),
  );
  try {
    let served;
    try {
      served = await serveStoreDashboard(dir, { port, log: silentLogger });
    } catch (e) {
      process.stderr.write(`pilotfish dashboard: ${(e as Error).message}\n`);
      return EXIT.failed;
    }
    process.stdout.write(`${served.url}\n`);
    process.stderr.write(
      `pilotfish: the dashboard of ${dir} (read-only) is at the address above; Ctrl-C stops it\n`,
    );
    await stop;
    await served.close();
    return EXIT.ok;
  } finally {
    dispose();
  }
}
