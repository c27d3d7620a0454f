#!/usr/bin/env node
import { CommanderError } from 'commander';
import { EXIT } from './args';
import { buildProgram, exitOf } from './program';

async function main(argv: string[]): Promise<number> {
  let code: number | undefined;
  const program = buildProgram(
    { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) },
    (c) => (code = c),
  );
  if (argv.length === 0) {
    process.stderr.write(program.helpInformation());
    return EXIT.usage;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) return exitOf(e);
    throw e;
  }
  return code ?? EXIT.ok;
}

// `pilotfish status | head`: a reader that went away is not an error
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(EXIT.ok);
  throw e;
});
// nobody reads stderr any more (the script that started `serve` exited, a `tee` was killed):
// its lines are lost, but the command goes on and ends as it would have, its session closed
// (every session also logs to its own files)
process.stderr.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code !== 'EPIPE') throw e;
});

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`pilotfish: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(EXIT.failed);
  },
);
