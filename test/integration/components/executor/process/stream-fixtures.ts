/**
 * For the output stream tests: the frames of the stream files a pool or a helper writes, read as
 * they grow (inotify on their directory, no polling), and the specs of 'stream' spawns.
 */
import * as fs from 'node:fs';
import type { StreamSpawnSpec } from '../../../../../src/components/executor/effects';
import { deferred, withTimeout } from '../../../../../src/lib/deferred';
import { decodeFrames, type Frame, type FrameKind } from '../../../../../src/lib/output-frames';
import { WAIT_MS } from './spawner-fixtures';

/** The frames in stream files: every file is decoded whole from its start on each read. */
export class StreamFrames {
  constructor(
    /** Where the files are: watched for their changes. */
    private readonly dir: string,
    private readonly files: () => readonly string[],
  ) {}

  /** Every frame in the files now, file by file. */
  all(): Frame[] {
    return this.files().flatMap((f) =>
      fs.existsSync(f) ? decodeFrames(fs.readFileSync(f), 0).frames : [],
    );
  }

  /** The frames of a task, in file order. */
  of(uid: string, frames = this.all()): Frame[] {
    return frames.filter((f) => f.uid === uid);
  }

  /** What a task's frames of one kind hold, joined. */
  data(uid: string, kind: FrameKind, frames = this.all()): Buffer {
    return Buffer.concat(
      this.of(uid, frames)
        .filter((f) => f.kind === kind)
        .map((f) => f.data),
    );
  }

  /** Whether the task's output has ended (its end frame is there). */
  ended(uid: string, frames = this.all()): boolean {
    return this.of(uid, frames).some((f) => f.kind === 'end');
  }

  /** Resolves with the frames once `check` holds for them; checked again at each file change. */
  async until(what: string, check: (frames: Frame[]) => boolean, ms = WAIT_MS): Promise<Frame[]> {
    const done = deferred<void>();
    const test = (): void => {
      try {
        if (check(this.all())) done.resolve();
      } catch (e) {
        done.reject(e instanceof Error ? e : new Error(String(e))); // a damaged file
      }
    };
    const watcher = fs.watch(this.dir, test);
    try {
      test(); // once the watch began: no change is missed
      await withTimeout(done.promise, ms, what);
      return this.all();
    } finally {
      watcher.close();
    }
  }

  /** Resolves once the tasks' end frames are all there. */
  untilEnded(uids: readonly string[], ms = WAIT_MS): Promise<Frame[]> {
    return this.until(
      `the end of ${uids.length} outputs`,
      (fr) => {
        const ended = new Set(fr.filter((f) => f.kind === 'end').map((f) => f.uid));
        return uids.every((u) => ended.has(u));
      },
      ms,
    );
  }
}

let n = 0;

/** A 'stream' spawn of `executable` (attempt 1 unless said), in `dir`. */
export function streamSpec(
  dir: string,
  executable: string,
  args: string[] = [],
  more: { env?: Record<string, string>; attempt?: number } = {},
): StreamSpawnSpec {
  return {
    uid: `stream.${++n}`,
    executable,
    args,
    env: more.env ?? {},
    cwd: dir,
    stream: { attempt: more.attempt ?? 1 },
  };
}

/** Mode bits of a file. */
export function modeOf(file: string): number {
  return fs.statSync(file).mode & 0o777;
}
