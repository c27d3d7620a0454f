#!/usr/bin/env node
import { ValidationError } from '../errors';
import { EXIT, USAGE, packageVersion, parseCommand } from './args';
import { loadWorkload, runWorkload } from './run';
import { formatSummary } from './summary';

async function main(argv: string[]): Promise<number> {
  const cmd = parseCommand(argv);
  switch (cmd.kind) {
    case 'help':
      process.stdout.write(USAGE);
      return EXIT.ok;
    case 'version':
      process.stdout.write(`${packageVersion()}\n`);
      return EXIT.ok;
    case 'usage-error':
      process.stderr.write(
        `pilotfish: ${cmd.message}\n${USAGE.split('\n\n')[0]}\nTry 'pilotfish --help' for more.\n`,
      );
      return EXIT.usage;
    case 'run':
      return run(cmd.file, cmd.dir);
  }
}

async function run(file: string, dir: string | undefined): Promise<number> {
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
    ...(dir !== undefined ? { dir } : {}),
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

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`pilotfish: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(EXIT.failed);
  },
);
