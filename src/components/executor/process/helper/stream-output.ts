/**
 * Output 'stream' in the Node spawner helper (main.ts): a task's stdout and stderr come
 * through pipes and are appended, framed with its uid and attempt (src/lib/output-frames.ts), to
 * the helper's one stream file (`--stream PATH`). pf-spawner.c does the same in C, with the same
 * bytes: keep the two in step. Node built-ins and dependency-free modules only.
 *
 * Frames are queued as data comes and written by the helper's flush, before that turn's events,
 * in one write; a write that fails loses them, and the task attempts they were of get lost
 * events, ahead of that turn's other events (so before their exits). A task's output ends (one end frame) once its main process exited and both its
 * pipes reached EOF: what it left behind may write on until the helper's kill grace ends it.
 *
 * Node gives a child's 'pipe' stdio as a socket pair, not a pipe: a task cannot open
 * /dev/stdout (ENXIO), which it can under the C helper.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, unlinkSync, writeSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { errnoOf, errnoText } from '../../../../lib/errno-text';
import { TAIL_BYTES } from '../../../../lib/file-tail';
import {
  FRAME_DATA_MAX,
  STREAM_MAGIC,
  encodeFrame,
  nextStreamPart,
  type FrameKind,
} from '../../../../lib/output-frames';
import { OutputCap } from './output-cap';
import type { ExitTails } from './protocol';

/** The last TAIL_BYTES bytes read, and how many were read in all. */
class Tail {
  bytes = 0;
  private last = Buffer.alloc(0);

  add(chunk: Buffer): void {
    this.bytes += chunk.length;
    const keep = Math.max(0, TAIL_BYTES - chunk.length);
    this.last = Buffer.concat([
      this.last.subarray(Math.max(0, this.last.length - keep)),
      chunk.subarray(Math.max(0, chunk.length - TAIL_BYTES)),
    ]);
  }

  base64(): string {
    return this.last.toString('base64');
  }
}

const KINDS: readonly FrameKind[] = ['stdout', 'stderr'];

/** The output of one 'stream' task. */
export class TaskOutput {
  private readonly tails = [new Tail(), new Tail()];
  private readonly streams: Readable[] = [];
  private readonly open = [true, true];
  private exited = false;
  /** It never ran, or its end frame is written: nothing more is framed. */
  private done = false;
  private readonly cap: OutputCap | undefined;

  constructor(
    private readonly file: StreamFile,
    readonly uid: string,
    readonly attempt: number,
    capBytes: number | undefined,
  ) {
    this.cap = capBytes === undefined ? undefined : new OutputCap(capBytes);
  }

  /** Frames what the task's stdout and stderr give, from now on. */
  attach(stdout: Readable, stderr: Readable): void {
    [stdout, stderr].forEach((s, k) => {
      this.streams.push(s);
      s.on('data', (chunk: Buffer) => this.data(k, chunk));
      // 'close' comes after 'end' (EOF) or an error: either way nothing more comes
      s.once('close', () => this.closed(k));
    });
  }

  /** The task never ran: no frames, not even an end. */
  abandon(): void {
    this.done = true;
    this.file.forget(this);
  }

  /** Its main process exited: the exit event's tails; the end frame once both pipes ended. */
  exit(): ExitTails {
    this.exited = true;
    const tails: ExitTails = {
      stdoutTail: this.tails[0]!.base64(),
      stderrTail: this.tails[1]!.base64(),
      stdoutBytes: this.tails[0]!.bytes,
      stderrBytes: this.tails[1]!.bytes,
    };
    const dropped = this.cap?.droppedBytes ?? 0;
    if (dropped > 0) tails.dropped = dropped;
    this.check();
    return tails;
  }

  /** The helper exits: what is still open ends now. */
  finish(): void {
    for (const s of this.streams) s.destroy();
    this.end();
  }

  private data(k: number, chunk: Buffer): void {
    if (this.done) return;
    this.tails[k]!.add(chunk);
    const now = this.cap === undefined ? chunk : this.cap.take(k, chunk);
    if (now !== undefined) this.frame(k, now);
  }

  private frame(k: number, data: Buffer): void {
    for (let at = 0; at < data.length; at += FRAME_DATA_MAX) {
      const piece = data.subarray(at, at + FRAME_DATA_MAX);
      this.file.queue(encodeFrame(KINDS[k]!, this.uid, this.attempt, piece), this);
    }
  }

  private closed(k: number): void {
    this.open[k] = false;
    this.check();
  }

  private check(): void {
    if (this.exited && !this.open[0] && !this.open[1]) this.end();
  }

  private end(): void {
    if (this.done) return;
    this.done = true;
    // a capped output's last part, after the markers of what was dropped
    for (const p of this.cap?.release() ?? []) this.frame(p.k, p.data);
    this.file.queue(encodeFrame('end', this.uid, this.attempt), this);
    this.file.forget(this);
  }
}

export interface StreamFileOptions {
  /** Asks for a flush on a later turn (with the events of that turn). */
  schedule(): void;
  /** An error event's message. */
  error(message: string): void;
  /** The cap of a task that names none (--stream-cap-bytes); undefined: none. */
  capBytes?: number | undefined;
  /** After a flush that left the file at this size or more, the next part (--stream-rotate-bytes). */
  rotateBytes?: number | undefined;
  /** Parts are removed, oldest first, while all of them take more (--stream-keep-bytes). */
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

/** The helper's stream file, opened for appending (0600), STREAM_MAGIC first when empty. */
export class StreamFile {
  private fd: number;
  /** The part written now, its size, and the earlier parts still on disk (oldest first). */
  private current: string;
  private size: number;
  private readonly parts: { file: string; size: number }[] = [];
  private frames: Buffer[] = [];
  /** The outputs whose frames are queued. */
  private owners = new Set<TaskOutput>();
  private readonly outputs = new Set<TaskOutput>();
  /** A write failed: said once, until one succeeds. */
  private failing = false;

  /** Throws the open's error (the helper cannot start). */
  constructor(
    readonly path: string,
    private readonly opts: StreamFileOptions,
  ) {
    this.current = path;
    [this.fd, this.size] = openPart(path);
  }

  /** The output of a task about to start; `capBytes`: its own cap, else the helper's. */
  task(uid: string, attempt: number, capBytes?: number): TaskOutput {
    const out = new TaskOutput(this, uid, attempt, capBytes ?? this.opts.capBytes);
    this.outputs.add(out);
    return out;
  }

  queue(frame: Buffer, owner: TaskOutput): void {
    this.frames.push(frame);
    this.owners.add(owner);
    if (this.frames.length === 1) this.opts.schedule();
  }

  forget(out: TaskOutput): void {
    this.outputs.delete(out);
  }

  /**
   * Appends the queued frames in one write. A failed write is cut back off (never half a frame
   * in the file), said once until a write succeeds, and its frames are lost: output never stops
   * a task, but the task attempts whose frames were lost are returned (for lost events).
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
        this.opts.error(`cannot write the output stream '${this.current}': ${errnoText(code, e)}`);
      }
      this.failing = true;
      const file = this.current;
      return [...owners].map((o) => ({ uid: o.uid, attempt: o.attempt, errno: code, file }));
    }
  }

  /**
   * Past rotateBytes: the next part (nextStreamPart) takes the writes, and the oldest parts go
   * while all take more than keepBytes. A part that cannot be opened: this one goes on.
   */
  private rotate(): void {
    const { rotateBytes, keepBytes } = this.opts;
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

  /** The helper exits: every output still open ends (its end frame). */
  finish(): void {
    for (const out of [...this.outputs]) out.finish();
  }
}

/** Opens a stream file for appending (0600), STREAM_MAGIC first when empty: its fd and size. */
function openPart(file: string): [number, number] {
  const fd = openSync(file, 'a', 0o600);
  let size = fstatSync(fd).size;
  if (size === 0) size = writeSync(fd, STREAM_MAGIC);
  return [fd, size];
}
