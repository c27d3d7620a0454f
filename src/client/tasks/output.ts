import { existsSync, watch, type FSWatcher } from 'node:fs';
import * as path from 'node:path';
import { OutputUnavailableError } from '../../errors';
import { FileLines } from '../../lib/file-lines';
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
  /** Its current attempt (output 'stream': frames name theirs); default 1. */
  attempt?: number;
}

/** Where a follower learns about its task: a TaskManager's Task, or a session's store. */
export interface OutputSource {
  uid: string;
  now(): TaskView | Promise<TaskView>;
  /** Calls `wake` when the task may have changed (a state, its sandbox); returns how to stop. */
  watch(wake: () => void): () => void;
}

/**
 * How often a follower looks at the file without being told to. inotify (fs.watch) reports
 * writes made on this host only: on a shared file system (NFS, Lustre) a task on another node
 * writes unseen, and only this look finds its lines. Slow on purpose: a follower costs nothing
 * while nothing happens, and a line shows within this time at worst.
 */
export const RECHECK_MS = 2_000;

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
  try {
    for (;;) {
      wake.clear();
      // the task's state before its output: when it had ended, this read gets every line
      const task = await src.now();
      const origin = originOf(src.uid, task);
      if (origin !== undefined && origin.key !== reading?.key) {
        // a first place, or a new attempt's: the old one's lines were given
        if (!existsSync(origin.root)) throw unreachable(src.uid, origin);
        const rest = lines?.rest();
        if (rest !== undefined) yield rest;
        await lines?.close();
        reading = origin;
        lines = origin.open(stream);
      }
      // a stream directory that does not exist yet: its parent is watched until it does
      const dir = reading === undefined ? undefined : watchedDir(reading);
      if (follow && dir !== undefined && dir !== watched) {
        dirWatch?.close();
        watched = dir;
        dirWatch = watch(dir, () => wake.ring());
        dirWatch.on('error', () => wake.ring()); // e.g. the sandbox removed: the timer goes on
      }
      if (lines !== undefined) {
        do {
          for (const line of await lines.read()) yield line;
        } while (await lines.more());
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
  open(stream: OutputStream): FileLines | StreamLines;
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
      open: (stream) => new StreamLines(streamDirOf(pilot), uid, attempt, stream),
    };
  }
  const sandbox = task.sandbox;
  if (task.output !== 'files' || sandbox === undefined) return undefined;
  return {
    key: `files ${sandbox}`,
    root: sandbox,
    mode: 'files',
    open: (stream) => new FileLines(path.join(sandbox, stream)),
  };
}

function watchedDir(origin: Origin): string {
  if (origin.mode === 'files') return origin.root;
  const dir = streamDirOf(origin.root);
  return existsSync(dir) ? dir : origin.root;
}

/**
 * tailOutput of a task this client follows: its sandbox and its end as its states are delivered
 * (`onState`: the TaskManager's), its pilot's sandbox from `pilotSandbox`. A function call writes
 * no output file: OutputUnavailableError.
 */
export function tailTask(
  task: Task,
  onState: (fn: (t: Task) => void) => () => void,
  opts: TailOptions = {},
  pilotSandbox: (pilot: string) => string | undefined = () => undefined,
): AsyncGenerator<string, void, undefined> {
  if (task.description.mode === 'function') {
    throw new OutputUnavailableError(
      `task ${task.uid} is a function call: it writes no output file`,
    );
  }
  return tailOutput(
    {
      uid: task.uid,
      now: () => ({
        sandbox: task.sandbox,
        final: task.final,
        output: task.output,
        pilotSandbox: task.pilot === undefined ? undefined : pilotSandbox(task.pilot),
        attempt: task.attempt,
      }),
      watch: (wake) => onState((t) => t === task && wake()),
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
    `cannot read the output of task ${uid}: ${where} is not on this machine ` +
      '(its pilot runs on nodes that share no file system with this one: read it there; or the ' +
      'sandbox was removed since)',
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
