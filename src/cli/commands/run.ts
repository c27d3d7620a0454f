import { Option, type Command } from 'commander';
import * as path from 'node:path';
import type { Workload } from '../../generated';
import { UsageError, ValidationError } from '../../errors';
import { StoreError, StoreUnreachableError } from '../../updater/state-store';
import { EXIT, docPath } from '../args';
import { onInterrupt } from '../interrupt';
import { countTasks, showProgress, type ProgressView } from '../progress';
import { type RunOptions, loadWorkload, resumeWorkload, runWorkload } from '../run';
import { DEFAULT_SESSIONS_DIR, resumedSessionDir } from '../session-dir';
import { formatSummary } from '../summary';

const EXIT_STATUS = `
exit status:
  0    every task ended DONE (also when the workload has no tasks)
  1    some task ended FAILED or CANCELED, or pilotfish failed (message on stderr)
  2    wrong usage or an invalid workload file (the message is on stderr)
  3    the workload's timeoutS passed before every task ended
  130  stopped by Ctrl-C (SIGINT): the tasks not ended were canceled (143: by SIGTERM)

Ctrl-C once stops cleanly (cancels what has not ended, ends the pilots, prints the summary);
twice leaves at once, and 'pilotfish run --resume SESSION' takes the run up again, as it
does a run that was killed.
The workload file and the summary: ${docPath('cli.md')}`;

interface RunFlags {
  dir: string;
  store?: string;
  resume?: string;
  json?: boolean;
}

/** `pilotfish run WORKLOAD.json`: runs a workload to its end and prints a summary. */
export function registerRun(program: Command, done: (code: number) => void): void {
  program
    .command('run')
    .summary("run a workload file's tasks and print a summary")
    .description(
      "Runs the workload's tasks on its pilots (default: one local pilot with every core), " +
        'shows progress (a bar on a terminal), and prints a summary.',
    )
    .argument('[workload]', 'the workload file (JSON: pilots, tasks, timeoutS)')
    .usage('[options] <workload> | --resume <session>')
    .option('--resume <session>', 'take up the run of a session whose pilotfish run ended early')
    .option('--dir <sessions-dir>', 'where session directories are', DEFAULT_SESSIONS_DIR)
    .addOption(
      new Option(
        '--store <store>',
        "the state store: 'embedded' (default) or a mongodb:// URI; overrides the workload's " +
          '(a password in a command line is seen by other users: prefer PILOTFISH_STORE or the workload file)',
      ).env('PILOTFISH_STORE'),
    )
    .option('--json', 'print the summary as one JSON document (progress stays on stderr)')
    .addHelpText('after', EXIT_STATUS)
    .action(async (file: string | undefined, opts: RunFlags) => done(await run(file, opts)));
}

const say = (line: string): boolean => process.stderr.write(`pilotfish: ${line}\n`);

async function run(file: string | undefined, flags: RunFlags): Promise<number> {
  if ((file === undefined) === (flags.resume === undefined)) {
    say(
      file === undefined
        ? "run: missing required argument 'workload' (or --resume SESSION)"
        : 'run: a workload file or --resume SESSION, not both',
    );
    process.stderr.write("(try 'pilotfish run --help')\n");
    return EXIT.usage;
  }
  let start: (opts: RunOptions) => ReturnType<typeof runWorkload>;
  try {
    if (file !== undefined) {
      const w: Workload = loadWorkload(file);
      const store = flags.store !== undefined ? { store: flags.store } : {};
      start = (opts) => runWorkload(w, { ...opts, dir: flags.dir, ...store });
    } else {
      const dir = resumedSessionDir(flags.resume!, flags.dir, flags.store);
      const store = flags.store !== undefined ? { store: flags.store } : {};
      start = (opts) => resumeWorkload(dir, { ...opts, ...store });
    }
  } catch (e) {
    if (!(e instanceof ValidationError || e instanceof UsageError)) throw e;
    say(file !== undefined ? `${file}: ${e.message}` : e.message);
    return EXIT.usage;
  }
  let session: { uid: string; dir: string } | undefined;
  let view: ProgressView | undefined;
  let stopWith: ((signal: string) => void) | undefined;
  const stop = new Promise<string>((resolve) => (stopWith = resolve));
  const resumeHint = (): string =>
    session === undefined
      ? 'nothing was started yet'
      : `session ${session.uid} can be resumed: ` +
        `pilotfish run --resume ${session.uid} --dir ${path.dirname(session.dir)}`;
  const stopCode = (signal: string): number =>
    signal === 'SIGTERM' ? EXIT.terminated : EXIT.interrupted;
  const dispose = onInterrupt(
    (signal) => {
      view?.stop();
      say(
        `${signal}: stopping: canceling the tasks not ended, then ending the pilots ` +
          '(Ctrl-C again leaves at once)',
      );
      stopWith?.(signal);
      stopWith = undefined;
    },
    (signal) => {
      view?.stop();
      say(`${signal} again: leaving now, while the pilots may still run tasks; ${resumeHint()}`);
      process.exit(stopCode(signal));
    },
  );
  let summary;
  try {
    summary = await start({
      stop,
      onSession: (s) => {
        session = s;
        say(`session ${s.uid} (${s.dir})`);
      },
      onTasks: (tasks) => {
        // none once stopping: the summary follows
        if (stopWith !== undefined) view = showProgress(() => countTasks(tasks), process.stderr);
      },
    });
  } catch (e) {
    if (e instanceof StoreUnreachableError || e instanceof StoreError) {
      say(e.message); // names the hosts and the driver's reason, never the URI's password
      return EXIT.failed;
    }
    if (!(e instanceof UsageError || e instanceof ValidationError)) throw e;
    say(e.message); // e.g. a session to resume that another run still drives
    return EXIT.usage;
  } finally {
    view?.stop();
    dispose();
  }
  process.stdout.write(
    flags.json === true ? `${JSON.stringify(summary)}\n` : formatSummary(summary),
  );
  if (summary.interrupted !== undefined) return stopCode(summary.interrupted);
  if (summary.timedOut !== undefined) return EXIT.timeout;
  return (summary.states.DONE ?? 0) === summary.tasks ? EXIT.ok : EXIT.failed;
}
