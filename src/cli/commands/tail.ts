import type { Command } from 'commander';
import { once } from 'node:events';
import * as path from 'node:path';
import { OutputUnavailableError, UsageError } from '../../errors';
import { tailOutput } from '../../client/tasks/output';
import { EXIT, docPath } from '../args';
import {
  addServerOptions,
  followStream,
  requestText,
  serverErrors,
  serverOf,
  taskRoute,
  usageFailure,
  wantsServer,
  type Server,
  type ServerFlags,
  type SseEvent,
} from '../server-client';
import { DEFAULT_SESSIONS_DIR, resolveSessionDir } from '../session-dir';
import { storeOutputSource } from '../store-source';

const EXIT_STATUS = `
exit status:
  0  the output was printed (with -f: the task has ended)
  1  the session has no task with that uid, or its output cannot be read here (the sandbox is
     on nodes that share no file system with this machine and the session has ended)
  2  wrong usage, or no such session (the message is on stderr)
  4  with --server: no server answers at the URL (with -f: not even after reconnecting)

SESSION is a session uid in --dir or a session directory; with --server URL it is not given,
and the service reads the output (-f reconnects where it was when the connection drops).
Details: ${docPath('cli.md')}`;

interface TailFlags extends ServerFlags {
  follow?: boolean;
  stderr?: boolean;
  json?: boolean;
  dir: string;
}

/** `pilotfish tail SESSION UID [-f]`: a task's stdout (or stderr), followed while it runs. */
export function registerTail(program: Command, done: (code: number) => void): void {
  const cmd = program
    .command('tail')
    .summary("print a task's output; -f follows it until the task ends")
    .description(
      "Prints the task's stdout (or stderr) from its start; with -f, goes on printing lines " +
        'as the task writes them and ends when the task ends. Reads the session directory, so it ' +
        'works on a running session and a finished one; where this machine does not see the ' +
        "pilot's sandbox, reads it through the live session and the pilot's agent.",
    )
    .argument('[session]', 'session uid (in --dir) or session directory (not with --server)')
    .argument('[uid]', "the task's uid")
    .usage('[options] <session> <uid> | --server <url> <uid>')
    .option('-f, --follow', 'go on with new lines until the task ends')
    .option('--stderr', 'print stderr instead of stdout')
    .option('--json', 'one JSON object per line: {"task", "stream", "line"}')
    .option('--dir <sessions-dir>', 'where session directories are', DEFAULT_SESSIONS_DIR);
  addServerOptions(cmd)
    .addHelpText('after', EXIT_STATUS)
    .action(async (session: string | undefined, uid: string | undefined, opts: TailFlags) => {
      if (wantsServer(opts)) {
        if (uid !== undefined) {
          return done(usageFailure('tail', 'with --server, give the UID alone (no SESSION)'));
        }
        if (session === undefined) return done(usageFailure('tail', "missing argument 'uid'"));
        return done(await serverErrors(() => remoteTail(serverOf(opts)!, session, opts)));
      }
      if (session === undefined || uid === undefined) {
        const what = session === undefined ? 'SESSION and UID' : 'UID';
        return done(usageFailure('tail', `missing ${what} (or --server URL and the UID)`));
      }
      done(await tail(session, uid, opts));
    });
}

async function tail(session: string, uid: string, flags: TailFlags): Promise<number> {
  try {
    const dir = resolveSessionDir(session, flags.dir);
    const found = storeOutputSource(dir, uid);
    if (found === undefined) {
      process.stderr.write(`pilotfish tail: no task '${uid}' in session ${path.basename(dir)}\n`);
      return EXIT.failed;
    }
    const { source } = found;
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

/**
 * `tail --server URL UID [-f]`: the task's output from the service, printed as the local tail
 * prints it. -f follows GET /v1/tasks/{uid}/output?follow=true to its `end` event; a dropped
 * stream is taken up again with Last-Event-ID (the byte offset it had), so no line is lost or
 * printed twice.
 */
async function remoteTail(server: Server, uid: string, flags: TailFlags): Promise<number> {
  const stream = flags.stderr === true ? 'stderr' : 'stdout';
  const out =
    flags.json === true
      ? (line: string) => `${JSON.stringify({ task: uid, stream, line })}\n`
      : (line: string) => `${line}\n`;
  const print = async (lines: string[]): Promise<void> => {
    if (lines.length === 0) return;
    if (!process.stdout.write(lines.map(out).join(''))) await once(process.stdout, 'drain');
  };
  const route = taskRoute(uid, `/output?stream=${stream}`);
  if (flags.follow !== true) {
    const text = await requestText(server, 'GET', route);
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    await print(lines);
    return EXIT.ok;
  }
  let partial = '';
  let failed: string | undefined;
  await followStream(server, `${route}&follow=true`, async (e: SseEvent) => {
    if (e.event === 'output') {
      const lines = (partial + (JSON.parse(e.data) as string)).split('\n');
      partial = lines.pop()!;
      await print(lines);
      return false;
    }
    if (e.event === 'error') failed = JSON.parse(e.data) as string;
    return e.event === 'end' || e.event === 'error';
  });
  if (partial !== '') await print([partial]);
  if (failed === undefined) return EXIT.ok;
  process.stderr.write(`pilotfish tail: ${failed}\n`);
  return EXIT.failed;
}
