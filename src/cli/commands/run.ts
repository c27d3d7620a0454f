import type { Command } from 'commander';
import { ValidationError } from '../../errors';
import { EXIT } from '../args';
import { loadWorkload, runWorkload } from '../run';
import { formatSummary } from '../summary';

const EXIT_STATUS = `
exit status:
  0  every task ended DONE (also when the workload has no tasks)
  1  some task ended FAILED or CANCELED, or pilotfish failed (message on stderr)
  2  wrong usage or an invalid workload file (the message is on stderr)
  3  the workload's timeoutS passed before every task ended

The workload file and the summary: docs/cli.md.`;

/** `pilotfish run WORKLOAD.json`: runs a workload to its end and prints a summary. */
export function registerRun(program: Command, done: (code: number) => void): void {
  program
    .command('run')
    .summary("run a workload file's tasks and print a summary")
    .description(
      "Runs the workload's tasks on its pilots (default: one local pilot with every core), " +
        'shows progress, and prints a summary.',
    )
    .argument('<workload>', 'the workload file (JSON: pilots, tasks, timeoutS)')
    .option('--dir <sessions-dir>', "where the session's directory is made", './.pilotfish')
    .addHelpText('after', EXIT_STATUS)
    .action(async (file: string, opts: { dir: string }) => done(await run(file, opts.dir)));
}

async function run(file: string, dir: string): Promise<number> {
  let workload;
  try {
    workload = loadWorkload(file);
  } catch (e) {
    if (e instanceof ValidationError) {
      process.stderr.write(`pilotfish: ${file}: ${e.message}\n`);
      return EXIT.usage;
    }
    throw e;
  }
  const tty = process.stderr.isTTY;
  const summary = await runWorkload(workload, {
    dir,
    onProgress: (n, total) => {
      if (tty && (n === total || n % 50 === 0)) {
        const width = 30;
        const fill = Math.round((n / total) * width);
        process.stderr.write(`\r[${'#'.repeat(fill)}${' '.repeat(width - fill)}] ${n}/${total}`);
        if (n === total) process.stderr.write('\n');
      }
    },
  });
  if (tty && summary.timedOut !== undefined) process.stderr.write('\n'); // end the progress bar
  process.stdout.write(formatSummary(summary));
  if (summary.timedOut !== undefined) return EXIT.timeout;
  return (summary.states.DONE ?? 0) === summary.tasks ? EXIT.ok : EXIT.failed;
}
