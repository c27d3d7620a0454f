import type { CommanderError } from 'commander';
import { Command } from 'commander';
import { EXIT, docPath, packageVersion } from './args';
import { registerCancel } from './commands/cancel';
import { registerClean } from './commands/clean';
import { registerDashboard } from './commands/dashboard';
import { registerExplain } from './commands/explain';
import { registerLab } from './commands/lab';
import { registerLogs } from './commands/logs';
import { registerProfile } from './commands/profile';
import { registerRun } from './commands/run';
import { registerServe } from './commands/serve';
import { registerSessions } from './commands/sessions';
import { registerSimulate } from './commands/simulate';
import { registerStatus } from './commands/status';
import { registerSubmit } from './commands/submit';
import { registerTail } from './commands/tail';
import { registerTimeline } from './commands/timeline';

/**
 * Each command is one file under commands/ with a `register` that adds it to the program.
 * Its action returns the exit status (EXIT); a usage error never reaches an action.
 */
export type Register = (program: Command, done: (code: number) => void) => void;

const COMMANDS: Register[] = [
  registerRun,
  registerStatus,
  registerCancel,
  registerExplain,
  registerSessions,
  registerClean,
  registerProfile,
  registerTimeline,
  registerDashboard,
  registerSimulate,
  registerTail,
  registerLogs,
  registerServe,
  registerSubmit,
  registerLab,
];

/** The `pilotfish` program: help and usage errors go through `write`, nothing calls process.exit. */
export function buildProgram(
  write: { out: (s: string) => void; err: (s: string) => void },
  done: (code: number) => void,
): Command {
  const program = new Command('pilotfish')
    .description('Runs many tasks on pilots: workstations and batch allocations (Slurm).')
    .version(packageVersion(), '--version', "print pilotfish's version and exit")
    .helpOption('-h, --help', 'print this help and exit')
    .helpCommand('help [command]', 'print the help of a command')
    .configureOutput({ writeOut: write.out, writeErr: write.err })
    .showHelpAfterError("(try 'pilotfish --help')")
    .addHelpText(
      'after',
      `\nEvery command, its options and exit statuses: ${docPath('cli.md')}\n` +
        `A first script, and where sessions, logs and outputs are: ${docPath('guide.md')}`,
    )
    .exitOverride();
  for (const register of COMMANDS) register(program, done);
  for (const cmd of program.commands) {
    cmd
      .helpOption('-h, --help', 'print this help and exit')
      .configureOutput({ writeOut: write.out, writeErr: write.err })
      .showHelpAfterError(`(try 'pilotfish ${cmd.name()} --help')`)
      .exitOverride();
  }
  return program;
}

/** The exit status for an error commander threw: help and version are not errors. */
export function exitOf(e: CommanderError): number {
  if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return EXIT.ok;
  if (e.code === 'commander.help') return EXIT.ok; // `pilotfish help`
  return EXIT.usage;
}
