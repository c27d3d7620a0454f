import { existsSync, watch, type FSWatcher } from 'node:fs';
import * as path from 'node:path';
import { OutputUnavailableError } from '../../errors';
import { FileLines } from '../../lib/file-lines';
import { chooseFiles, localFiles, type SandboxFiles } from '../../lib/sandbox-files';
import { streamDirOf } from '../../lib/stream-cursor';
import { StreamLines } from '../../lib/stream-lines';
import type { Interner } from '../../lib/strings';
import type { NotificationDetail } from '../../states/notification';
import type { OutputMode, Task } from '../task';

export type OutputStream = 'stdout' | 'stderr';

export interface TailOptions {
  /** Go on with new lines as they are written, and end when the task ends (default false). */
  follow?: boolean;
  /** Which of its output streams (default 'stdout'). */
  stream?: OutputStream;
}

/** A task as a follower of its output sees it now. */
export interface TaskView {
  /** Its sandbox, once an agent made it. */
  sandbox: string | undefined;
  /** It has ended (final state): what its files hold is all there will be. */
  final: boolean;
  /**
   * Where its output goes: 'files' (`stdout`, `stderr` in its sandbox) or 'stream' (framed into
   * its pilot's stream files, src/lib/output-frames.ts). Undefined until known (the agent says
   * it with the sandbox, `detail.output`): nothing is read until then.
   */
  output?: OutputMode | undefined;
  /** Its pilot's sandbox, once it is bound to one (output 'stream': the stream files are there). */
  pilotSandbox?: string | undefined;
  /** Its pilot, once it is bound to one. */
  pilot?: string | undefined;
  /** Its current attempt (output 'stream': frames name theirs); default 1. */
  attempt?: number;
}

/** Where a follower learns about its task: a TaskManager's Task, or a session's store. */
export interface OutputSource {
  uid: string;
  now(): TaskView | Promise<TaskView>;
  /** Calls `wake` when the task may have changed (a state, its sandbox); returns how to stop. */
  watch(wake: () => void): () => void;
  /**
   * How to read the sandbox of `pilot` (`sandbox`): this machine's files, or the agent's over
   * its file channel where this machine does not see them (chooseFiles); undefined when it
   * cannot be read. Default: this machine's, where the directory exists.
   */
  files?(pilot: string | undefined, sandbox: string): Promise<SandboxFiles | undefined>;
}

/**
 * How often a follower looks at the file without being told to. inotify (fs.watch) reports
 * writes made on this host only: on a shared file system (NFS, Lustre) a task on another node
 * writes unseen, and only this look finds its lines. Slow on purpose: a follower costs nothing
 * while nothing happens, and a line shows within this time at worst.
 */
export const RECHECK_MS = 2_000;

/**
 * How often a follower reading a sandbox through its agent looks again: nothing there tells
 * it of a write, and a look is a request of a few bytes.
 */
export const REMOTE_RECHECK_MS = 250;

/**
 * The lines of a task's stdout (or stderr), from the start: those there now, and with `follow`
 * those written later, until the task ends (final state) and its last lines are read. A
 * partial last line is given at the end. Output 'files' is read from the file in the task's
 * sandbox, output 'stream' from its pilot's stream files (StreamLines). A new attempt starts
 * over. Wakes on file changes (fs.watch on the
 * sandbox, or the stream directory) and on the task's changes (the source), not by polling.
 * Leaving the loop early releases the watchers. Throws OutputUnavailableError when the sandbox
 * (output 'stream': the pilot's) is not on this machine.
 */
export async function* tailOutput(
  src: OutputSource,
  opts: TailOptions = {},
): AsyncGenerator<string, void, undefined> {
  const stream = opts.stream ?? 'stdout';
  const follow = opts.follow ?? false;
  const wake = new Wake();
  const stopSource = follow ? src.watch(() => wake.ring()) : undefined;
  const timer = follow ? setInterval(() => wake.ring(), RECHECK_MS) : undefined;
  /** What `lines` reads, and the directory watched for it. */
  let reading: Origin | undefined;
  let watched: string | undefined;
  let dirWatch: FSWatcher | undefined;
  let lines: FileLines | StreamLines | undefined;
  let files: SandboxFiles | undefined;
  let remoteTimer: NodeJS.Timeout | undefined;
  try {
    for (;;) {
      wake.clear();
      // the task's state before its output: when it had ended, this read gets every line
      const task = await src.now();
      const origin = originOf(src.uid, task);
      if (origin !== undefined && origin.key !== reading?.key) {
        // a first place, or a new attempt's: the old one's lines were given
        files = await filesOf(src, task, origin);
        if (files === undefined) throw unreachable(src.uid, origin);
        const rest = lines?.rest();
        if (rest !== undefined) yield rest;
        await lines?.close();
        reading = origin;
        lines = origin.open(stream, files);
        if (follow && files.kind === 'remote') {
          remoteTimer ??= setInterval(() => wake.ring(), REMOTE_RECHECK_MS);
        }
      }
      // a stream directory that does not exist yet: its parent is watched until it does
      const dir =
        reading === undefined || files?.kind !== 'local' ? undefined : watchedDir(reading);
      if (follow && dir !== undefined && dir !== watched) {
        dirWatch?.close();
        watched = dir;
        dirWatch = watch(dir, () => wake.ring());
        dirWatch.on('error', () => wake.ring()); // e.g. the sandbox removed: the timer goes on
      }
      if (lines !== undefined) {
        try {
          do {
            for (const line of await lines.read()) yield line;
          } while (await lines.more());
        } catch (e) {
          throw files?.kind === 'remote' ? agentAway(src.uid, reading!, e) : e;
        }
      }
      // a stream's end frame says its output is complete, but a follower ends with the task
      // (a retry's attempt may write more), as it does with files
      if (!follow || task.final) {
        const rest = lines?.rest();
        if (rest !== undefined) yield rest;
        return;
      }
      await wake.wait();
    }
  } finally {
    stopSource?.();
    clearInterval(timer);
    clearInterval(remoteTimer);
    dirWatch?.close();
    await lines?.close();
  }
}

/** Where a task's output is read from. */
interface Origin {
  /** Changes when the output read must start over (another sandbox, attempt or mode). */
  key: string;
  /** The directory that must be on this machine: the sandbox, or the pilot's. */
  root: string;
  mode: OutputMode;
  open(stream: OutputStream, files: SandboxFiles): FileLines | StreamLines;
}

/**
 * How `origin` is read: as its source says for the pilot's sandbox (chooseFiles), else this
 * machine's files where the directory is here; undefined when it cannot be read.
 */
async function filesOf(
  src: OutputSource,
  task: TaskView,
  origin: Origin,
): Promise<SandboxFiles | undefined> {
  const pilotDir = task.pilotSandbox ?? origin.root;
  const files =
    src.files === undefined
      ? existsSync(pilotDir)
        ? localFiles
        : undefined
      : await src.files(task.pilot, pilotDir);
  // a removed sandbox is unreachable here as it is there
  if (files?.kind === 'local' && !existsSync(origin.root)) return undefined;
  return files;
}

/** Where the task's output is now, or undefined while it has none (or it is not known yet). */
function originOf(uid: string, task: TaskView): Origin | undefined {
  if (task.output === 'stream') {
    const pilot = task.pilotSandbox;
    if (pilot === undefined) return undefined;
    const attempt = task.attempt ?? 1;
    return {
      key: `stream ${attempt} ${pilot}`,
      root: pilot,
      mode: 'stream',
      open: (stream, files) => new StreamLines(streamDirOf(pilot), uid, attempt, stream, files),
    };
  }
  const sandbox = task.sandbox;
  if (task.output !== 'files' || sandbox === undefined) return undefined;
  return {
    key: `files ${sandbox}`,
    root: sandbox,
    mode: 'files',
    open: (stream, files) => new FileLines(path.join(sandbox, stream), files),
  };
}

function watchedDir(origin: Origin): string {
  if (origin.mode === 'files') return origin.root;
  const dir = streamDirOf(origin.root);
  return existsSync(dir) ? dir : origin.root;
}

/**
 * tailOutput of a task this client follows: its sandbox and its end as its states are delivered
 * (`onState`: the TaskManager's), its pilot's sandbox from `pilotSandbox`, read through its
 * agent (`agents`) where this machine does not see it. A function call's output is framed into
 * its pilot's stream files (what it printed while it ran: docs/functions.md), as 'stream'.
 */
export function tailTask(
  task: Task,
  onState: (fn: (t: Task) => void) => () => void,
  opts: TailOptions = {},
  pilotSandbox: (pilot: string) => string | undefined = () => undefined,
  agents?: { files(pilot: string): SandboxFiles },
): AsyncGenerator<string, void, undefined> {
  const call = task.description.mode === 'function';
  return tailOutput(
    {
      uid: task.uid,
      now: () => ({
        sandbox: task.sandbox,
        final: task.final,
        output: call ? 'stream' : task.output,
        pilotSandbox: task.pilot === undefined ? undefined : pilotSandbox(task.pilot),
        pilot: task.pilot,
        attempt: task.attempt,
      }),
      watch: (wake) => onState((t) => t === task && wake()),
      // the agent's own sandbox through its file channel where this machine does not see it
      files: (pilot, dir) =>
        chooseFiles(dir, pilot === undefined ? undefined : agents?.files(pilot)),
    },
    opts,
  );
}

/**
 * A task whose agent said where its output goes (`detail.output`) and named no sandbox of its
 * own with it runs in its pilot's sandbox (docs/output.md): that becomes its sandbox, once its
 * pilot is known too (`d` names the pilot late: a sandbox already known is kept).
 */
export function placeInPilotSandbox(
  task: Task,
  d: NotificationDetail,
  pilotSandbox: (pilot: string) => string | undefined,
  dirs: Interner,
): void {
  if (d.sandbox !== undefined || task.output === undefined || task.pilot === undefined) return;
  if (d.output === undefined && task.sandbox !== undefined) return;
  const dir = pilotSandbox(task.pilot);
  if (dir !== undefined && dir !== task.sandbox) task.setSandbox(dir, dirs);
}

/** A pilot's sandbox, from the session's pilot managers (`managersOf(rt).pilots`). */
export function pilotSandboxIn(
  managers: Iterable<{ get(uid: string): { sandbox: string } | undefined }>,
): (pilot: string) => string | undefined {
  return (pilot) => {
    for (const m of managers) {
      const p = m.get(pilot);
      if (p !== undefined) return p.sandbox;
    }
    return undefined;
  };
}

function unreachable(uid: string, origin: Origin): OutputUnavailableError {
  const where =
    origin.mode === 'files' ? `its sandbox ${origin.root}` : `its pilot's sandbox ${origin.root}`;
  return new OutputUnavailableError(
    `cannot read the output of task ${uid}: ${where} is not on this machine, ` +
      "and its pilot's agent cannot read it for this client (its pilot ended, or the sandbox " +
      'was removed since)',
    origin.root,
  );
}

/** A read through the agent failed: the agent is away (its pilot ended) or said no. */
function agentAway(uid: string, origin: Origin, e: unknown): Error {
  const code = (e as { code?: unknown }).code;
  if (code !== 'EHOSTUNREACH' && code !== 'ETIMEDOUT') return e as Error;
  return new OutputUnavailableError(
    `cannot read the output of task ${uid} any more: its pilot's sandbox is not on this ` +
      `machine and its agent no longer answers (${(e as Error).message})`,
    origin.root,
  );
}

/** A wake-up call that is not lost when it rings before anyone waits. */
class Wake {
  private rung = false;
  private waiter: (() => void) | undefined;

  ring(): void {
    this.rung = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  clear(): void {
    this.rung = false;
  }

  wait(): Promise<void> {
    if (this.rung) return Promise.resolve();
    return new Promise((resolve) => (this.waiter = resolve));
  }
}
