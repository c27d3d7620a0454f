#!/usr/bin/env node
import { ValidationError } from '../errors';
import { loadWorkload, runWorkload } from './run';

const USAGE = `usage: pilotfish run WORKLOAD.json [--dir SESSIONS_DIR]

  run   runs the workload's tasks on its pilots (default: one local pilot with
        every core), shows progress, and prints a summary. Exit status: 0 when
        every task is DONE, 1 when some failed or were canceled, 2 on bad input.`;

async function main(argv: string[]): Promise<number> {
  const [cmd, file, ...rest] = argv;
  if (cmd !== 'run' || file === undefined) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const dirIdx = rest.indexOf('--dir');
  const dir = dirIdx >= 0 ? rest[dirIdx + 1] : undefined;
  let workload;
  try {
    workload = loadWorkload(file);
  } catch (e) {
    if (e instanceof ValidationError) {
      process.stderr.write(`pilotfish: ${file}: ${e.message}\n`);
      return 2;
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
  const rate = summary.tasks / Math.max(summary.seconds, 1e-3);
  process.stdout.write(
    `session ${summary.session}: ${summary.tasks} tasks in ${summary.seconds.toFixed(2)} s (${rate.toFixed(0)} tasks/s)\n`,
  );
  for (const [state, n] of Object.entries(summary.states).sort()) {
    process.stdout.write(`  ${state.padEnd(9)} ${n}\n`);
  }
  for (const f of summary.failures.slice(0, 10)) {
    process.stdout.write(`  ${f.uid}: ${f.code}: ${f.message}\n`);
  }
  if (summary.failures.length > 10) {
    process.stdout.write(`  ... and ${summary.failures.length - 10} more\n`);
  }
  return summary.states.DONE === summary.tasks ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`pilotfish: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
