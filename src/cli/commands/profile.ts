import type { Command } from 'commander';
import { profileReport } from '../../profile/intervals';
import { readProfile } from '../../profile/read';
import { EXIT, docPath } from '../args';
import { usageErrors } from '../usage';
import { formatProfile } from '../profile-table';
import { DEFAULT_SESSIONS_DIR, resolveSessionDir } from '../session-dir';

const EXIT_STATUS = `
exit status:
  0  the profile was printed (a live session's too: open intervals end now)
  1  the session's files could not be read (the message is on stderr)
  2  wrong usage, or no such session (the message is on stderr)

Buckets, utilization and efficiency: ${docPath('profiling.md')}`;

/** `pilotfish profile [SESSION]`: per task and per pilot intervals and the utilization report. */
export function registerProfile(program: Command, done: (code: number) => void): void {
  program
    .command('profile')
    .summary("print a session's profile and how well its pilots' cores were used")
    .description(
      "Reads a session's store (live or finished) and prints each pilot's utilization: where " +
        'every core-second went (start-up, scheduling, launching, running, tearing down, idle, ' +
        'draining). With --json: every task attempt and pilot with its states and intervals.',
    )
    .argument('[session]', 'a session uid in --dir, or a session directory (default: the newest)')
    .option('--json', 'print one JSON document: pilots, tasks, intervals and utilization')
    .option('--dir <sessions-dir>', 'where the sessions are', DEFAULT_SESSIONS_DIR)
    .addHelpText('after', EXIT_STATUS)
    .action(async (session: string | undefined, opts: { json?: boolean; dir: string }) =>
      done(await usageErrors(() => profile(session, opts))),
    );
}

async function profile(
  session: string | undefined,
  opts: { json?: boolean; dir: string },
): Promise<number> {
  const dir = resolveSessionDir(session, opts.dir); // a UsageError: exit 2 (usageErrors)
  const p = await readProfile(dir);
  const report = profileReport(p);
  if (opts.json === true) process.stdout.write(`${JSON.stringify(report)}\n`);
  else process.stdout.write(formatProfile(p, report.utilization));
  return EXIT.ok;
}
