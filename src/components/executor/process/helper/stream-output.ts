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
import type { Readable } from 'node:stream';
import { TAIL_BYTES } from '../../../../lib/file-tail';
import { FRAME_DATA_MAX, encodeFrame, type FrameKind } from '../../../../lib/output-frames';
import { StreamAppender, type StreamAppenderOptions } from '../../../../lib/stream-appender';
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

export interface StreamFileOptions extends StreamAppenderOptions {
  /** The cap of a task that names none (--stream-cap-bytes); undefined: none. */
  capBytes?: number | undefined;
}

export type { LostOutput } from '../../../../lib/stream-appender';

/**
 * The helper's stream file (src/lib/stream-appender.ts: appends, rotates, cuts back a failed
 * write) and the outputs of its tasks.
 */
export class StreamFile extends StreamAppender<TaskOutput> {
  private readonly outputs = new Set<TaskOutput>();

  /** Throws the open's error (the helper cannot start). */
  constructor(
    path: string,
    private readonly opts: StreamFileOptions,
  ) {
    super(path, opts);
  }

  /** The output of a task about to start; `capBytes`: its own cap, else the helper's. */
  task(uid: string, attempt: number, capBytes?: number): TaskOutput {
    const out = new TaskOutput(this, uid, attempt, capBytes ?? this.opts.capBytes);
    this.outputs.add(out);
    return out;
  }

  forget(out: TaskOutput): void {
    this.outputs.delete(out);
  }

  /** The helper exits: every output still open ends (its end frame). */
  finish(): void {
    for (const out of [...this.outputs]) out.finish();
  }
}
