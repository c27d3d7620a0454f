import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import { readProfile } from '../../profile/read';
import { renderTimeline } from '../../profile/timeline';
import { EXIT, docPath } from '../args';
import { usageErrors } from '../usage';
import { DEFAULT_SESSIONS_DIR, resolveSessionDir } from '../session-dir';

const EXIT_STATUS = `
exit status:
  0  the file was written
  1  the session could not be read or the file not written (the message is on stderr)
  2  wrong usage, or no such session (the message is on stderr)

How to read the chart: ${docPath('profiling.md')}`;

/** `pilotfish timeline [SESSION] -o FILE`: the session's timeline as one self-contained HTML file. */
export function registerTimeline(program: Command, done: (code: number) => void): void {
  program
    .command('timeline')
    .summary("write a session's timeline chart as one self-contained HTML file")
    .description(
      'Writes an HTML file (SVG, no network) with a lane per core and GPU showing each task ' +
        "attempt's phases, the utilization over time, the count of tasks in each state, and the " +
        "pilots' lifetimes. Hover a task to see it; works on a live session too.",
    )
    .argument('[session]', 'a session uid in --dir, or a session directory (default: the newest)')
    .option('-o, --output <file>', 'the HTML file to write', 'timeline.html')
    .option('--dir <sessions-dir>', 'where the sessions are', DEFAULT_SESSIONS_DIR)
    .option(
      '--json',
      'say what was written as one JSON document: {"file", "tasks", "pilots", "bytes"}',
    )
    .addHelpText('after', EXIT_STATUS)
    .action(async (session: string | undefined, opts: { output: string; dir: string }) =>
      done(await usageErrors(() => timeline(session, opts))),
    );
}

async function timeline(
  session: string | undefined,
  opts: { output: string; dir: string; json?: boolean },
): Promise<number> {
  const dir = resolveSessionDir(session, opts.dir); // a UsageError: exit 2 (usageErrors)
  const p = await readProfile(dir);
  const html = renderTimeline(p);
  try {
    writeFileSync(opts.output, html);
  } catch (e) {
    process.stderr.write(
      `pilotfish timeline: cannot write ${opts.output}: ${(e as Error).message}\n`,
    );
    return EXIT.failed;
  }
  const file = path.resolve(opts.output);
  process.stdout.write(
    opts.json === true
      ? `${JSON.stringify({ file, tasks: p.tasks.length, pilots: p.pilots.length, bytes: Buffer.byteLength(html) })}\n`
      : `${file}: ${p.tasks.length} tasks, ${p.pilots.length} pilots\n`,
  );
  return EXIT.ok;
}
