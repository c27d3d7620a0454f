/**
 * The function worker protocol (docs/function-workers.md is the normative copy, for workers in
 * other languages). A worker is a process with two extra descriptors: it reads requests on fd 3
 * and writes replies on fd 4, both byte streams of frames: a 4-byte big-endian length, then that
 * many bytes of one msgpack map (standard msgpack: no extension types but the timestamp). What a
 * worker prints goes to its stdout and stderr, which the pool sends to log files: never to fds 3/4.
 *
 *   parent -> worker: {t:'init', protocol, worker, maxResultBytes, maxOutputBytes?}   (first, once)
 *                     {t:'calls', calls:[{id, module, export?, args?, env?, unset?, cwd?, cap?}]}
 *                     {t:'cancel', ids:[id...]}
 *   worker -> parent: {t:'ready', protocol, pid, language, version}     (first, once)
 *                     {t:'done', results:[{id, ok:true, value, stdout?, stderr?, dropped?} |
 *                                         {id, ok:false, error:{name, message, stack?, code?}, phase,
 *                                          stdout?, stderr?, dropped?}]}
 *
 * A worker runs its calls one at a time, in the order received, and answers each id once; a
 * cancel is answered at once (out of order), and the canceled call's own outcome is dropped.
 * `value` is a msgpack bin holding the msgpack encoding of what the function returned, so the
 * parent passes it on without decoding it. A call's `env`, `unset` and `cwd` say what differs
 * from the call before it in the same worker (protocol 2): most of a call's environment is its
 * slot's and its pilot's, the same from call to call. With `maxOutputBytes` in init, what a
 * call prints while it runs is its own: kept by the worker (capped) and sent with its result
 * (`stdout`, `stderr`: absent when it printed nothing). Light on purpose: the worker imports it.
 */
import { Packr, Unpackr } from 'msgpackr';

export const PROTOCOL_VERSION = 2;

/** Bytes of the length prefix of a frame. */
export const FRAME_HEADER_BYTES = 4;

/** Where a call failed: loading its module, running it, or encoding what it returned. */
export type CallPhase = 'import' | 'call' | 'encode';

/** An error as it crosses the protocol: what a person needs to act on it. */
export interface WireError {
  name: string;
  message: string;
  stack?: string;
  /** An error code the error carried (ENOENT, ERR_MODULE_NOT_FOUND), if any. */
  code?: string;
}

/** One function call. `id` is the parent's: unique among the calls a worker has unanswered. */
export interface WireCall {
  id: number;
  /** An absolute path, a file:// URL, a path relative to `cwd`, or a package name. */
  module: string;
  /** The exported function to call; default: the module's default export. */
  export?: string;
  args?: unknown[];
  /**
   * The call's environment, as changes to the previous call's in this worker (none before the
   * first): variables to set (new, or with another value) ...
   */
  env?: Record<string, string>;
  /** ... and variables of the previous call's environment this one does not have. */
  unset?: string[];
  /**
   * The working directory of the call (where `module` is resolved from), when it is not the
   * previous call's; '' for the worker's own (the first call's, when absent).
   */
  cwd?: string;
  /** This call's own output cap (its task's outputCapBytes); the lower cap holds. */
  cap?: number;
}

/**
 * What a call printed while it ran (init's maxOutputBytes > 0), with its result: the bytes of
 * its stdout and of its stderr (absent: none), capped as OutputCap keeps a task's (the first
 * half of the cap as it came, then the last half, a marker line `[pilotfish: N bytes dropped]`
 * between them in each stream that lost bytes), and how many bytes the cap dropped.
 */
export interface WireOutput {
  stdout?: Uint8Array;
  stderr?: Uint8Array;
  dropped?: number;
}

export type WireResult = (
  | { id: number; ok: true; value: Uint8Array }
  | { id: number; ok: false; error: WireError; phase: CallPhase }
) &
  WireOutput;

export type ParentMessage =
  | {
      t: 'init';
      protocol: number;
      worker: number;
      maxResultBytes: number;
      /** What one call may print, kept for it (0 or absent: its output goes to the log files). */
      maxOutputBytes?: number;
    }
  | { t: 'calls'; calls: WireCall[] }
  | { t: 'cancel'; ids: number[] };

export type WorkerMessage =
  | { t: 'ready'; protocol: number; pid: number; language: string; version: string }
  | { t: 'done'; results: WireResult[] };

/** A stream that does not follow the framing: the peer cannot be trusted to continue. */
export class FrameError extends Error {
  override readonly name = 'FrameError';
}

/**
 * A msgpack codec of protocol maps that any msgpack library decodes: plain maps (no msgpackr
 * records), bins copied out of the frame (a kept result must not keep the frame's chunk).
 */
export function protocolCodec(): { pack(m: unknown): Buffer; unpack(b: Uint8Array): unknown } {
  const packr = new Packr({ useRecords: false, variableMapSize: true });
  const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, copyBuffers: true });
  return { pack: (m) => packr.pack(m), unpack: (b) => unpackr.unpack(b) as unknown };
}

/** `payload` with its length prefix, in a buffer of its own. */
export function frame(payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  out.writeUInt32BE(payload.length, 0);
  out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

/**
 * Cuts a byte stream into frame payloads, whatever the chunking: a frame split over chunks, or
 * several frames in one. Bytes of a frame are joined once, when the frame is complete.
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private held = 0;
  /** Payload length of the frame being read, once its header is in. */
  private need = -1;

  constructor(private readonly maxFrameBytes: number) {}

  /** Bytes received that are not yet part of a returned payload. */
  get pending(): number {
    return this.held;
  }

  /** The payloads this chunk completes (subarrays of the chunks); throws FrameError. */
  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.held += chunk.length;
    if (this.need < 0 && this.held >= FRAME_HEADER_BYTES) this.need = this.header();
    if (this.need < 0 || this.held < FRAME_HEADER_BYTES + this.need) return [];
    const all = this.chunks.length === 1 ? chunk : Buffer.concat(this.chunks, this.held);
    const out: Buffer[] = [];
    let at = 0;
    for (;;) {
      out.push(all.subarray(at + FRAME_HEADER_BYTES, at + FRAME_HEADER_BYTES + this.need));
      at += FRAME_HEADER_BYTES + this.need;
      this.need = -1;
      if (all.length - at < FRAME_HEADER_BYTES) break;
      this.need = this.checked(all.readUInt32BE(at));
      if (all.length - at - FRAME_HEADER_BYTES < this.need) break;
    }
    const rest = all.subarray(at);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.held = rest.length;
    return out;
  }

  /** The length in the first 4 bytes held, which may span chunks. */
  private header(): number {
    const first = this.chunks[0]!;
    const head = first.length >= FRAME_HEADER_BYTES ? first : Buffer.concat(this.chunks, this.held);
    return this.checked(head.readUInt32BE(0));
  }

  private checked(length: number): number {
    if (length > this.maxFrameBytes) {
      throw new FrameError(
        `frame of ${length} bytes announced, over the limit of ${this.maxFrameBytes}: ` +
          'the stream is not in this protocol, or out of step',
      );
    }
    return length;
  }
}

/** The largest reply frame a parent accepts from a worker with these result and output limits. */
export function maxReplyFrameBytes(maxResultBytes: number, maxOutputBytes = 0): number {
  // the output of one call past the frame target, with its marker lines
  return Math.max(maxResultBytes, REPLY_FRAME_TARGET_BYTES) + maxOutputBytes + 1024 * 1024;
}

/**
 * A worker starts a new reply frame once the current one holds this many bytes of values, so
 * one frame stays under maxReplyFrameBytes (a value itself is at most maxResultBytes; error
 * texts are cut to MAX_ERROR_TEXT).
 */
export const REPLY_FRAME_TARGET_BYTES = 4 * 1024 * 1024;

/** The longest message or stack of an error a worker sends (characters; longer ones are cut). */
export const MAX_ERROR_TEXT = 16 * 1024;

/** The result limit when the parent names none. */
export const DEFAULT_MAX_RESULT_BYTES = 1024 * 1024;

/** What one call may print, kept for it, unless its pilot's output cap is lower: 1 MiB. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
