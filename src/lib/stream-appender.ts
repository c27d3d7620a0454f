/**
 * Appending frames to a stream file (src/lib/output-frames.ts) and its rotated parts: what the
 * Node spawner helper (process/helper/stream-output.ts) and the agent (function calls' output,
 * functions/call-output-file.ts) both write with. Frames are queued and appended in one write
 * per flush; a write that fails is cut back off (never half a frame in the file) and its frames
 * are lost, named by their owners. Node built-ins and dependency-free modules only (the spawner
 * helper imports it).
 */
import { closeSync, fstatSync, ftruncateSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { errnoOf, errnoText } from './errno-text';
import { STREAM_MAGIC, nextStreamPart } from './output-frames';

/** Whose frames are queued: the task attempt they are of. */
export interface FrameOwner {
  readonly uid: string;
  readonly attempt: number;
}

export interface StreamAppenderOptions {
  /** Asks for a flush on a later turn (the first frame queued since the last flush). */
  schedule(): void;
  /** A write failed (said once until one succeeds). */
  error(message: string): void;
  /** After a flush that left the file at this size or more, the next part. */
  rotateBytes?: number | undefined;
  /** Parts are removed, oldest first, while all of them take more. */
  keepBytes?: number | undefined;
}

/** Frames of a task attempt that were not written: what a lost event says. */
export interface LostOutput {
  uid: string;
  attempt: number;
  errno: string;
  /** The part the frames were for. */
  file: string;
}

/** A stream file, opened for appending (0600), STREAM_MAGIC first when empty. */
export class StreamAppender<O extends FrameOwner = FrameOwner> {
  private fd: number;
  /** The part written now, its size, and the earlier parts still on disk (oldest first). */
  private current: string;
  private size: number;
  private readonly parts: { file: string; size: number }[] = [];
  private frames: Buffer[] = [];
  /** The owners whose frames are queued. */
  private owners = new Set<O>();
  /** A write failed: said once, until one succeeds. */
  private failing = false;

  /** Throws the open's error. */
  constructor(
    readonly path: string,
    private readonly appendOpts: StreamAppenderOptions,
  ) {
    this.current = path;
    [this.fd, this.size] = openPart(path);
  }

  /** The part written now (a rotation moves on to the next). */
  get file(): string {
    return this.current;
  }

  queue(frame: Buffer, owner: O): void {
    this.frames.push(frame);
    this.owners.add(owner);
    if (this.frames.length === 1) this.appendOpts.schedule();
  }

  /**
   * Appends the queued frames in one write. A failed write is cut back off, said once until a
   * write succeeds, and its frames are lost: the task attempts whose frames were lost are
   * returned (for lost events).
   */
  flush(): LostOutput[] {
    if (this.frames.length === 0) return [];
    const buf = this.frames.length === 1 ? this.frames[0]! : Buffer.concat(this.frames);
    const owners = this.owners;
    this.frames = [];
    this.owners = new Set();
    let off = 0;
    try {
      while (off < buf.length) off += writeSync(this.fd, buf, off);
      this.failing = false;
      this.size += buf.length;
      this.rotate();
      return [];
    } catch (e) {
      try {
        if (off > 0) ftruncateSync(this.fd, fstatSync(this.fd).size - off);
      } catch {
        // the file is gone bad: the next write says so
      }
      const code = errnoOf(e);
      if (!this.failing) {
        this.appendOpts.error(
          `cannot write the output stream '${this.current}': ${errnoText(code, e)}`,
        );
      }
      this.failing = true;
      const file = this.current;
      return [...owners].map((o) => ({ uid: o.uid, attempt: o.attempt, errno: code, file }));
    }
  }

  /** Closes the file (what is queued is dropped: flush first). */
  close(): void {
    this.frames = [];
    this.owners = new Set();
    try {
      closeSync(this.fd);
    } catch {
      // closed already
    }
  }

  /**
   * Past rotateBytes: the next part (nextStreamPart) takes the writes, and the oldest parts go
   * while all take more than keepBytes. A part that cannot be opened: this one goes on.
   */
  private rotate(): void {
    const { rotateBytes, keepBytes } = this.appendOpts;
    if (rotateBytes === undefined || this.size < rotateBytes) return;
    const next = nextStreamPart(this.current);
    let opened: [number, number];
    try {
      opened = openPart(next);
    } catch {
      return; // a full disk: the next flush tries again
    }
    closeSync(this.fd);
    this.parts.push({ file: this.current, size: this.size });
    [this.fd, this.size] = opened;
    this.current = next;
    let total = this.parts.reduce((n, p) => n + p.size, this.size);
    while (keepBytes !== undefined && total > keepBytes && this.parts.length > 0) {
      const old = this.parts.shift()!;
      total -= old.size;
      try {
        unlinkSync(old.file);
      } catch {
        // removed by someone else: its room is free all the same
      }
    }
  }
}

/** Opens a stream file for appending (0600), STREAM_MAGIC first when empty: its fd and size. */
function openPart(file: string): [number, number] {
  const fd = openSync(file, 'a', 0o600);
  let size = fstatSync(fd).size;
  if (size === 0) size = writeSync(fd, STREAM_MAGIC);
  return [fd, size];
}
