import type { Command } from 'commander';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { TaskView } from '../../client/tasks/output';
import { UsageError } from '../../errors';
import { FileLines } from '../../lib/file-lines';
import { PRIVATE_DIR, PRIVATE_FILE } from '../../lib/private-files';
import { chooseFiles, type SandboxFiles } from '../../lib/sandbox-files';
import { streamDirOf } from '../../lib/stream-cursor';
import { passStreamDir, type FrameSink } from '../../lib/stream-pass';
import { readNotifications, readSessionFacts } from '../../profile/read';
import { EXIT, docPath } from '../args';
import { LinePrinter, OutFiles, STREAMS, type LineFormat, type Stream } from '../log-output';
import { sessionFiles } from '../session-files';
import { DEFAULT_SESSIONS_DIR, resolveSessionDir } from '../session-dir';
import { viewsOf } from '../store-source';
import { usageErrors } from '../usage';

const EXIT_STATUS = `
exit status:
  0  the output was printed (with --out: written)
  1  a named task is not in the session (nothing is printed), or some output cannot be read
     here (a pilot's sandbox on nodes that share no file system with this machine, of a session
     that has ended; a damaged stream file): the rest is printed, the message is on stderr
  2  wrong usage, or no such session (the message is on stderr)

SESSION is a session uid in --dir or a session directory.
Details: ${docPath('cli.md')}`;

interface LogsFlags {
  stderr?: boolean;
  out?: string;
  json?: boolean;
  dir: string;
}

/** `pilotfish logs SESSION [UID...]`: tasks' output, printed or written out as files. */
export function registerLogs(program: Command, done: (code: number) => void): void {
  program
    .command('logs')
    .summary("print a session's tasks' output, or write it out as files (--out)")
    .description(
      "Prints the stdout (or stderr) of the session's tasks, or of those named: output " +
        "'stream' from their pilots' stream files, output 'files' from their sandboxes. Lines of " +
        'several tasks are prefixed with the uid. With --out DIR, writes DIR/<uid>/stdout and ' +
        'stderr for each task instead. Reads the session directory (a running session gives ' +
        "what its tasks wrote so far), and a pilot's sandbox this machine does not see through " +
        "the live session and the pilot's agent.",
    )
    .argument('<session>', 'session uid (in --dir) or session directory')
    .argument('[uid...]', "the tasks' uids (default: every task of the session)")
    .option('--stderr', 'print stderr instead of stdout')
    .option('--out <dir>', 'write <dir>/<uid>/stdout and stderr per task instead of printing')
    .option('--json', 'one JSON object per line: {"uid", "attempt", "stream", "line"}')
    .option('--dir <sessions-dir>', 'where session directories are', DEFAULT_SESSIONS_DIR)
    .addHelpText('after', EXIT_STATUS)
    .action(async (session: string, uids: string[], opts: LogsFlags) =>
      done(await usageErrors(() => logs(session, uids, opts))),
    );
}

/** A task whose output is read: its latest attempt, as the store knows it. */
interface Wanted {
  attempt: number;
  view: TaskView;
}

async function logs(session: string, uids: string[], flags: LogsFlags): Promise<number> {
  if (flags.out !== undefined && flags.stderr === true) {
    throw new UsageError('--out writes both stdout and stderr: leave out --stderr');
  }
  const dir = resolveSessionDir(session, flags.dir);
  const facts = readSessionFacts(dir);
  const unknown = uids.filter((u) => !facts.tasks.has(u));
  for (const u of unknown) {
    process.stderr.write(`pilotfish logs: no task '${u}' in session ${path.basename(dir)}\n`);
  }
  if (unknown.length > 0) return EXIT.failed;
  const problems: string[] = [];
  const views = viewsOf(await readNotifications(dir), (p) => facts.pilots.get(p)?.sandbox);
  const wanted = new Map<string, Wanted>();
  for (const uid of uids.length > 0 ? new Set(uids) : facts.tasks.keys()) {
    if (flags.out !== undefined && (uid === '.' || uid === '..')) {
      problems.push(`task '${uid}' cannot be written out: its uid is not a file name`);
      continue;
    }
    const view = views.get(uid);
    // never bound to a pilot: it wrote nothing
    if (view?.pilotSandbox !== undefined) wanted.set(uid, { attempt: view.attempt ?? 1, view });
  }
  const stream: Stream = flags.stderr === true ? 'stderr' : 'stdout';
  const writer = flags.out === undefined ? undefined : new OutFiles(outDir(flags.out));
  const printer =
    writer === undefined ? new LinePrinter(formatOf(flags, stream, uids, wanted)) : undefined;
  const sink: FrameSink = {
    wants: (uid, attempt) => wanted.get(uid)?.attempt === attempt,
    frame: (f) => {
      if (f.kind === 'end') {
        writer?.start(f.uid);
        writer?.end(f.uid);
        printer?.end(f.uid, f.attempt);
      } else if (writer !== undefined) writer.data(f.uid, f.kind, f.data);
      else if (f.kind === stream) printer!.data(f.uid, f.attempt, f.data);
    },
    flush: async () => {
      writer?.flush(); // before the next chunk is read over the frames' data
      await printer?.flush();
    },
  };
  /** How each pilot's sandbox is read: here, or through the live session and its agent. */
  const reading = new Map<string, SandboxFiles>();
  try {
    // one pass over each pilot's stream files, whatever the number of tasks in them
    for (const [pilotDir, { pilot, tasks }] of byPilot(wanted)) {
      const remote = pilot === undefined ? undefined : sessionFiles(dir, pilot);
      const files = await chooseFiles(pilotDir, remote);
      if (files === undefined) {
        problems.push(
          `cannot read the output of ${plural(tasks.length, 'task')} (${tasks[0]}…): their ` +
            `pilot's sandbox ${pilotDir} is not on this machine (nor read through a live ` +
            "session by the pilot's agent)",
        );
        continue;
      }
      reading.set(pilotDir, files);
      const damaged = await passStreamDir(streamDirOf(pilotDir), sink, files);
      problems.push(...damaged.map((e) => e.message));
    }
    printer?.endAll((uid) => wanted.get(uid)!.attempt);
    await printer?.flush();
    // output 'files': its sandbox's files (a task whose output is not known wrote none yet)
    for (const [uid, w] of wanted) {
      const files = reading.get(w.view.pilotSandbox!);
      if (files === undefined || w.view.output !== 'files') continue;
      const sandbox = w.view.sandbox;
      if (sandbox === undefined || !(await files.exists(sandbox))) continue;
      if (writer !== undefined) await copyFiles(sandbox, writer.start(uid), files);
      else await printFile(path.join(sandbox, stream), uid, w.attempt, printer!, files);
    }
  } finally {
    writer?.closeAll();
  }
  if (writer !== undefined) {
    const summary = { out: writer.root, tasks: writer.tasks };
    process.stdout.write(
      flags.json === true
        ? `${JSON.stringify(summary)}\n`
        : `wrote the output of ${plural(summary.tasks, 'task')} to ${summary.out}\n`,
    );
  }
  for (const p of problems) process.stderr.write(`pilotfish logs: ${p}\n`);
  return problems.length > 0 ? EXIT.failed : EXIT.ok;
}

/** Each line as it is for one named task, prefixed with the uid for several, or as JSON. */
function formatOf(
  flags: LogsFlags,
  stream: Stream,
  uids: string[],
  wanted: Map<string, Wanted>,
): LineFormat {
  if (flags.json === true) {
    return (uid, attempt, line) => `${JSON.stringify({ uid, attempt, stream, line })}\n`;
  }
  if (new Set(uids).size === 1) return (_uid, _attempt, line) => `${line}\n`;
  const width = Math.max(0, ...[...wanted.keys()].map((u) => u.length));
  return (uid, _attempt, line) => `${uid.padEnd(width)} | ${line}\n`;
}

/** The wanted tasks by their pilot's sandbox (and that pilot). */
function byPilot(
  wanted: Map<string, Wanted>,
): Map<string, { pilot: string | undefined; tasks: string[] }> {
  const out = new Map<string, { pilot: string | undefined; tasks: string[] }>();
  for (const [uid, w] of wanted) {
    const dir = w.view.pilotSandbox!;
    const at = out.get(dir);
    if (at === undefined) out.set(dir, { pilot: w.view.pilot, tasks: [uid] });
    else at.tasks.push(uid);
  }
  return out;
}

/** --out: made 0700 when it does not exist; an existing directory keeps its mode. */
function outDir(dir: string): string {
  const abs = path.resolve(dir);
  mkdirSync(abs, { recursive: true, mode: PRIVATE_DIR });
  return abs;
}

/** A files-mode task's stdout and stderr into its --out directory (missing: left empty). */
async function copyFiles(sandbox: string, to: string, files: SandboxFiles): Promise<void> {
  for (const s of STREAMS) {
    const from = path.join(sandbox, s);
    if (!(await files.exists(from))) continue;
    const out = path.join(to, s);
    writeFileSync(out, '', { mode: PRIVATE_FILE });
    chmodSync(out, PRIVATE_FILE);
    const fh = await files.open(from);
    try {
      const buf = Buffer.allocUnsafe(COPY_CHUNK);
      for (let at = 0; ;) {
        const { bytesRead } = await fh.read(buf, 0, buf.length, at);
        if (bytesRead === 0) break;
        writeFileSync(out, buf.subarray(0, bytesRead), { flag: 'a' });
        at += bytesRead;
      }
    } finally {
      await fh.close();
    }
  }
}

/** Bytes copied at a time by copyFiles. */
const COPY_CHUNK = 256 * 1024;

async function printFile(
  file: string,
  uid: string,
  attempt: number,
  printer: LinePrinter,
  files: SandboxFiles,
): Promise<void> {
  const lines = new FileLines(file, files);
  try {
    do {
      for (const l of await lines.read()) printer.line(uid, attempt, l);
      await printer.flush();
    } while (await lines.more());
    const rest = lines.rest();
    if (rest !== undefined) printer.line(uid, attempt, rest);
    await printer.flush();
  } finally {
    await lines.close();
  }
}

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}
