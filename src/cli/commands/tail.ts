import type { Command } from 'commander';
import { once } from 'node:events';
import * as path from 'node:path';
import { OutputUnavailableError, UsageError } from '../../errors';
import { tailOutput } from '../../client/tasks/output';
import { EXIT, docPath } from '../args';
import { DEFAULT_SESSIONS_DIR, resolveSessionDir } from '../session-dir';
import { storeOutputSource } from '../store-source';

const EXIT_STATUS = `
exit status:
  0  the output was printed (with -f: the task has ended)
  1  the session has no task with that uid, or its output cannot be read here (the sandbox is
     on nodes that share no file system with this machine and the session has ended, or the
     task is a function call, which writes no output file)
  2  wrong usage, or no such session (the message is on stderr)

SESSION is a session uid in --dir or a session directory.
Details: ${docPath('cli.md')}`;

interface TailFlags {
  follow?: boolean;
  stderr?: boolean;
  json?: boolean;
  dir: string;
}

/** `pilotfish tail SESSION UID [-f]`: a task's stdout (or stderr), followed while it runs. */
export function registerTail(program: Command, done: (code: number) => void): void {
  program
    .command('tail')
    .summary("print a task's output; -f follows it until the task ends")
    .description(
      "Prints the task's stdout (or stderr) from its start; with -f, goes on printing lines " +
        'as the task writes them and ends when the task ends. Reads the session directory, so it ' +
        'works on a running session and a finished one; where this machine does not see the ' +
        "pilot's sandbox, reads it through the live session and the pilot's agent.",
    )
    .argument('<session>', 'session uid (in --dir) or session directory')
    .argument('<uid>', "the task's uid")
    .option('-f, --follow', 'go on with new lines until the task ends')
    .option('--stderr', 'print stderr instead of stdout')
    .option('--json', 'one JSON object per line: {"task", "stream", "line"}')
    .option('--dir <sessions-dir>', 'where session directories are', DEFAULT_SESSIONS_DIR)
    .addHelpText('after', EXIT_STATUS)
    .action(async (session: string, uid: string, opts: TailFlags) =>
      done(await tail(session, uid, opts)),
    );
}

async function tail(session: string, uid: string, flags: TailFlags): Promise<number> {
  try {
    const dir = resolveSessionDir(session, flags.dir);
    const found = storeOutputSource(dir, uid);
    if (found === undefined) {
      process.stderr.write(`pilotfish tail: no task '${uid}' in session ${path.basename(dir)}\n`);
      return EXIT.failed;
    }
    const { source, description } = found;
    if (description.mode === 'function') {
      throw new OutputUnavailableError(`task ${uid} is a function call: it writes no output file`);
    }
    const stream = flags.stderr === true ? 'stderr' : 'stdout';
    const lines = tailOutput(source, { follow: flags.follow === true, stream });
    const out =
      flags.json === true
        ? (line: string) => `${JSON.stringify({ task: uid, stream, line })}\n`
        : (line: string) => `${line}\n`;
    for await (const line of lines) {
      if (!process.stdout.write(out(line))) await once(process.stdout, 'drain');
    }
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`pilotfish tail: ${e.message}\n`);
      return EXIT.usage;
    }
    if (e instanceof OutputUnavailableError) {
      process.stderr.write(`pilotfish tail: ${e.message}\n`);
      return EXIT.failed;
    }
    throw e;
  }
  return EXIT.ok;
}
