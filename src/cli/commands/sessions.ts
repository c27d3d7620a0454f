import type { Command } from 'commander';
import * as path from 'node:path';
import { TASK_STATES } from '../../states/task-model';
import { EXIT } from '../args';
import { DEFAULT_SESSIONS_DIR, listSessionDirs } from '../session-dir';
import { surveySession, type SessionSummary } from '../session-survey';
import { formatAge } from '../status-format';

const EXIT_STATUS = `
exit status:
  0  the list was printed (also when there is no session)
  1  pilotfish failed (message on stderr)
  2  wrong usage (message on stderr)

state: live (its client answers on the control socket), closing, ended (closed by its client),
or crashed (its client went away without closing it: Session.open({ resume }) takes it up).`;

/** `pilotfish sessions`: each session in --dir with its age, state and task counts. */
export function registerSessions(program: Command, done: (code: number) => void): void {
  program
    .command('sessions')
    .summary('list the sessions in a directory with their age, state and tasks')
    .description('Lists the sessions in --dir, newest first: age, state, tasks per final state.')
    .option('--dir <sessions-dir>', 'where the sessions are', DEFAULT_SESSIONS_DIR)
    .option('--json', 'print one JSON document: {dir, sessions: [...]}')
    .addHelpText('after', EXIT_STATUS)
    .action(async (opts: { dir: string; json?: boolean }) => done(await sessions(opts)));
}

async function sessions(opts: { dir: string; json?: boolean }): Promise<number> {
  const list: SessionSummary[] = [];
  for (const dir of listSessionDirs(opts.dir)) list.push(await surveySession(dir));
  if (opts.json === true) {
    process.stdout.write(JSON.stringify({ dir: path.resolve(opts.dir), sessions: list }) + '\n');
    return EXIT.ok;
  }
  if (list.length === 0) {
    process.stdout.write(`no session in ${path.resolve(opts.dir)}\n`);
    return EXIT.ok;
  }
  const now = Date.now();
  const rows = list.map((s) => [
    s.uid,
    s.state,
    s.started !== undefined ? formatAge(now - s.started) : '?',
    String(s.tasks),
    TASK_STATES.filter((st) => s.counts[st] !== undefined)
      .map((st) => `${st} ${s.counts[st]}`)
      .join(', '),
  ]);
  const head = ['SESSION', 'STATE', 'AGE', 'TASKS', 'STATES'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const r of [head, ...rows]) {
    process.stdout.write(
      r
        .map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i]!) : c))
        .join('  ')
        .trimEnd() + '\n',
    );
  }
  return EXIT.ok;
}
