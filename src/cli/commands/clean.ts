import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { rmSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { EXIT } from '../args';
import { ask } from '../control-client';
import { DEFAULT_SESSIONS_DIR, listSessionDirs } from '../session-dir';
import { journalLife, liveAgents } from '../session-info';
import { diskUsage, formatBytes, SURVEY_ANSWER_MS } from '../session-survey';

const EXIT_STATUS = `
exit status:
  0  every session meant to go was removed (or, with --dry-run, listed); also when none was
  1  some directory could not be removed (message on stderr), or pilotfish failed
  2  wrong usage (message on stderr)

A live session is never removed, nor (unless --crashed) a crashed one: its client died without
closing it, and Session.open({ resume }) can still take it up. Even with --crashed, a session
whose local agents still run (until their client timeout) is kept.`;

interface CleanOptions {
  dir: string;
  olderThan: number;
  dryRun?: boolean;
  crashed?: boolean;
  json?: boolean;
}

/** One session directory `clean` removed (or would). */
interface Removed {
  uid: string;
  dir: string;
  state: string;
  bytes: number;
}

/** `pilotfish clean`: removes the directories of ended sessions. */
export function registerClean(program: Command, done: (code: number) => void): void {
  program
    .command('clean')
    .summary('remove the directories of ended sessions')
    .description(
      'Removes the directories of the sessions in --dir that ended (closed by their client) at ' +
        'least --older-than days ago, and says what it removed and the space freed.',
    )
    .option('--dir <sessions-dir>', 'where the sessions are', DEFAULT_SESSIONS_DIR)
    .option('--older-than <days>', 'only sessions that ended at least this long ago', days, 0)
    .option('--crashed', 'also sessions whose client died without closing them')
    .option('--dry-run', 'say what would be removed, remove nothing')
    .option('--json', 'print one JSON document: {removed: [...], bytes, dryRun}')
    .addHelpText('after', EXIT_STATUS)
    .action(async (opts: CleanOptions) => done(await clean(opts)));
}

async function clean(opts: CleanOptions): Promise<number> {
  const before = Date.now() - opts.olderThan * 86_400_000;
  const removed: Removed[] = [];
  let failed = 0;
  for (const dir of listSessionDirs(opts.dir)) {
    // the journal first (cheap), then whether a client answers (a session may be live in a
    // client whose socket is gone, but a crashed one's journal has no close mark either)
    const life = journalLife(dir);
    if (life.state !== 'ended' && !(life.state === 'crashed' && opts.crashed === true)) continue;
    // a crashed session's last sign of life: its files' last change
    const ended = life.closed ?? statSync(dir).mtimeMs;
    if (ended > before || (await answers(dir))) continue;
    // a crashed session's local agents work on until their client timeout: not under them
    if (life.state === 'crashed' && liveAgents(dir).length > 0) continue;
    const bytes = diskUsage(dir);
    if (opts.dryRun !== true) {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch (e) {
        failed++;
        process.stderr.write(`pilotfish: cannot remove ${dir}: ${(e as Error).message}\n`);
        continue;
      }
    }
    removed.push({ uid: path.basename(dir), dir, state: life.state, bytes });
  }
  const bytes = removed.reduce((n, r) => n + r.bytes, 0);
  const dryRun = opts.dryRun === true;
  if (opts.json === true) {
    process.stdout.write(
      JSON.stringify({ dir: path.resolve(opts.dir), dryRun, removed, bytes }) + '\n',
    );
  } else {
    const verb = dryRun ? 'would remove' : 'removed';
    for (const r of removed) {
      process.stdout.write(`${verb} ${r.uid} (${r.state}, ${formatBytes(r.bytes)})\n`);
    }
    const what = `${removed.length} session${removed.length === 1 ? '' : 's'}`;
    process.stdout.write(`${verb} ${what}, ${formatBytes(bytes)}${dryRun ? '' : ' freed'}\n`);
  }
  return failed > 0 ? EXIT.failed : EXIT.ok;
}

/** Whether a client answers on the session's control socket (a live or closing session). */
async function answers(dir: string): Promise<boolean> {
  return (await ask(dir, { op: 'status', pending: 0, running: 0 }, SURVEY_ANSWER_MS)) !== undefined;
}

function days(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) {
    throw new InvalidArgumentError('must be a number of days, 0 or more');
  }
  return n;
}
