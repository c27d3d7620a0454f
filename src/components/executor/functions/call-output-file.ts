/**
 * The agent's side of function calls' output: what a call printed while it ran (CallPrinted,
 * sent by its worker with its result) is appended, framed with its task's uid and attempt as a
 * spawner helper frames an executable's (src/lib/output-frames.ts), to the pilot's stream file
 * of function calls, `<pilot sandbox>/output/functions.pfout` (rotated as the helpers' files
 * are: `functions-1.pfout`, ...), so tmgr.tail, `pilotfish tail|logs` and the API read it as
 * any task's; and its tails go with its exit, as a helper's do. The file is made with the first
 * output: a pilot whose calls print nothing has none, and a call that prints nothing costs
 * nothing here. All of a call's frames (its stdout, its stderr, its end) go in one write, the
 * calls of one bulk of results together.
 */
import * as path from 'node:path';
import { errnoOf, errnoText } from '../../../lib/errno-text';
import { TAIL_BYTES, cutToLine } from '../../../lib/file-tail';
import type { Logger } from '../../../lib/logger';
import { FRAME_DATA_MAX, encodeFrame, type FrameKind } from '../../../lib/output-frames';
import { StreamAppender } from '../../../lib/stream-appender';
import type { ExitedEvent } from '../effects';
import type { CallPrinted } from './pool-types';

/** The name of the function calls' stream file in the pilot's stream directory. */
export const FUNCTION_STREAM_FILE = 'functions.pfout';

export interface CallOutputFileOptions {
  /** The pilot's stream directory (made by the spawner pool). */
  dir: string;
  /** Its share of the pilot's stream disk (streamShare): rotation and the parts kept. */
  rotateBytes?: number;
  keepBytes?: number;
  logger: Logger;
}

/** A call that printed, and the exit event its tails go into. */
export interface PrintedCall {
  uid: string;
  printed: CallPrinted;
  exit: ExitedEvent;
}

export class CallOutputFile {
  private file: StreamAppender | undefined;
  /** Why the file could not be opened (said once; every call's output is lost then). */
  private unopened: string | undefined;

  constructor(private readonly opts: CallOutputFileOptions) {}

  /** Frames the calls' output in one write, and sets each exit's `output` (tails, losses). */
  take(calls: PrintedCall[]): void {
    const file = this.open();
    const lost = new Map<string, string>();
    for (const c of calls) {
      const { attempt } = c.printed;
      if (file === undefined) lost.set(c.uid, this.unopened!);
      else if (Buffer.byteLength(c.uid) > 0xffff) {
        lost.set(c.uid, 'a uid of more than 65535 bytes does not fit in a stream frame');
      } else {
        const owner = { uid: c.uid, attempt };
        frames('stdout', c.printed.stdout, owner, file);
        frames('stderr', c.printed.stderr, owner, file);
        file.queue(encodeFrame('end', c.uid, attempt), owner);
      }
    }
    for (const l of file?.flush() ?? []) {
      lost.set(
        l.uid,
        `cannot write the output stream '${l.file}': ${errnoText(l.errno, l.errno)} (${l.errno})`,
      );
    }
    for (const c of calls) c.exit.output = outputOf(c.printed, lost.get(c.uid));
  }

  close(): void {
    this.file?.close();
    this.file = undefined;
  }

  private open(): StreamAppender | undefined {
    if (this.file !== undefined || this.unopened !== undefined) return this.file;
    const file = path.join(this.opts.dir, FUNCTION_STREAM_FILE);
    try {
      this.file = new StreamAppender(file, {
        schedule: () => undefined, // take() flushes what it queued
        error: (message) =>
          this.opts.logger.warn('function call output not written', { why: message }),
        ...(this.opts.rotateBytes === undefined ? {} : { rotateBytes: this.opts.rotateBytes }),
        ...(this.opts.keepBytes === undefined ? {} : { keepBytes: this.opts.keepBytes }),
      });
    } catch (e) {
      const code = errnoOf(e);
      this.unopened = `cannot open the output stream '${file}': ${errnoText(code, e)} (${code})`;
      this.opts.logger.warn('function call output not written', { why: this.unopened });
    }
    return this.file;
  }
}

/** A stream's bytes as frames of at most FRAME_DATA_MAX. */
function frames(
  kind: FrameKind,
  bytes: Uint8Array | undefined,
  owner: { uid: string; attempt: number },
  file: StreamAppender,
): void {
  if (bytes === undefined) return;
  const all = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  for (let at = 0; at < all.length; at += FRAME_DATA_MAX) {
    file.queue(
      encodeFrame(kind, owner.uid, owner.attempt, all.subarray(at, at + FRAME_DATA_MAX)),
      owner,
    );
  }
}

/** The exit's output: the tails of what was kept, its size, what the cap dropped, a loss. */
function outputOf(p: CallPrinted, lost: string | undefined): NonNullable<ExitedEvent['output']> {
  const out: NonNullable<ExitedEvent['output']> = {
    stdout: tail(p.stdout),
    stderr: tail(p.stderr),
    stdoutBytes: p.stdout?.length ?? 0,
    stderrBytes: p.stderr?.length ?? 0,
  };
  if (p.dropped !== undefined && p.dropped > 0) out.dropped = p.dropped;
  if (lost !== undefined) out.lost = lost;
  return out;
}

/** The last TAIL_BYTES, cut at a line start as file tails are. */
function tail(bytes: Uint8Array | undefined): string {
  if (bytes === undefined) return '';
  const from = Math.max(0, bytes.length - TAIL_BYTES);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset + from, bytes.length - from).toString(
    'utf8',
  );
  return cutToLine(text, from > 0);
}
