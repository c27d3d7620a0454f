import { existsSync, watch, type FSWatcher } from 'node:fs';
import * as path from 'node:path';
import { OutputUnavailableError } from '../errors';
import { FileLines } from '../lib/file-lines';
import type { Task } from './task';

export type OutputStream = 'stdout' | 'stderr';

export interface TailOptions {
  /** Go on with new lines as they are written, and end when the task ends (default false). */
  follow?: boolean;
  /** Which file of the task's sandbox (default 'stdout'). */
  stream?: OutputStream;
}

/** A task as a follower of its output sees it now. */
export interface TaskView {
  /** Its sandbox, once an agent made it. */
  sandbox: string | undefined;
  /** It has ended (final state): what its files hold is all there will be. */
  final: boolean;
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
 * The lines of a task's stdout (or stderr), from the file's start: those there now, and with
 * `follow` those written later, until the task ends (final state) and its last lines are read.
 * A partial last line is given at the end. Wakes on file changes (fs.watch on the sandbox) and
 * on the task's changes (the source), not by polling. Leaving the loop early releases the
 * watchers. Throws OutputUnavailableError when the sandbox is not on this machine.
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
  let dir: string | undefined;
  let dirWatch: FSWatcher | undefined;
  let lines: FileLines | undefined;
  try {
    for (;;) {
      wake.clear();
      // the task's state before its file: when it had ended, this read gets every line
      const task = await src.now();
      if (task.sandbox !== undefined && task.sandbox !== dir) {
        // a first sandbox, or a new attempt's elsewhere: the old one's lines were given
        if (!existsSync(task.sandbox)) throw unreachable(src.uid, task.sandbox);
        const rest = lines?.rest();
        if (rest !== undefined) yield rest;
        await lines?.close();
        dir = task.sandbox;
        lines = new FileLines(path.join(dir, stream));
        if (follow) {
          dirWatch?.close();
          dirWatch = watch(dir, () => wake.ring());
          dirWatch.on('error', () => wake.ring()); // e.g. the sandbox removed: the timer goes on
        }
      }
      if (lines !== undefined) {
        do {
          for (const line of await lines.read()) yield line;
        } while (await lines.more());
      }
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

/**
 * tailOutput of a task this client follows: its sandbox and its end as its states are delivered
 * (`onState`: the TaskManager's). A function call writes no output file: OutputUnavailableError.
 */
export function tailTask(
  task: Task,
  onState: (fn: (t: Task) => void) => () => void,
  opts: TailOptions = {},
): AsyncGenerator<string, void, undefined> {
  if (task.description.mode === 'function') {
    throw new OutputUnavailableError(
      `task ${task.uid} is a function call: it writes no output file`,
    );
  }
  return tailOutput(
    {
      uid: task.uid,
      now: () => ({ sandbox: task.sandbox, final: task.final }),
      watch: (wake) => onState((t) => t === task && wake()),
    },
    opts,
  );
}

function unreachable(uid: string, sandbox: string): OutputUnavailableError {
  return new OutputUnavailableError(
    `cannot read the output of task ${uid}: its sandbox ${sandbox} is not on this machine ` +
      '(its pilot runs on nodes that share no file system with this one: read it there; or the ' +
      'sandbox was removed since)',
    sandbox,
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
