/**
 * The format of output stream files (`output: 'stream'`): what the spawner helpers write
 * (native/spawner/pf-spawner.c and the Node helper,
 * src/components/executor/process/helper/, write the same bytes) and every reader
 * reads. A file starts with STREAM_MAGIC; then frames, each whole in one write:
 *
 *   u32 size (little-endian): the bytes of the frame after this field
 *   u8  kind: 1 stdout, 2 stderr, 3 end (the task's output is complete; no data)
 *   u32 attempt
 *   u16 uid length, then the uid (UTF-8)
 *   data (the rest): bytes as the task wrote them, at most FRAME_DATA_MAX per frame
 *
 * A frame that runs past the end of the file is not there yet (a writer mid-append) or never
 * will be (a writer killed mid-write): readers stop before it. docs/output.md says the same for
 * users who read these files with their own tools.
 */

export const STREAM_MAGIC = Buffer.from('PFSTRM1\n', 'latin1');
/** Most data bytes in one frame: a pipe read's worth. */
export const FRAME_DATA_MAX = 64 * 1024;
/** size + kind + attempt + uid length. */
const HEAD = 4 + 1 + 4 + 2;
/** The largest `size` a frame can have. */
const MAX_SIZE = HEAD - 4 + 0xffff + FRAME_DATA_MAX;

export type FrameKind = 'stdout' | 'stderr' | 'end';
const KIND_CODE: Record<FrameKind, number> = { stdout: 1, stderr: 2, end: 3 };
const KIND_OF = [undefined, 'stdout', 'stderr', 'end'] as const;

export interface Frame {
  kind: FrameKind;
  uid: string;
  attempt: number;
  data: Buffer;
}

/** One frame's bytes. */
export function encodeFrame(kind: FrameKind, uid: string, attempt: number, data?: Buffer): Buffer {
  const id = Buffer.from(uid, 'utf8');
  const body = data ?? Buffer.alloc(0);
  if (body.length > FRAME_DATA_MAX) {
    throw new RangeError(`a frame holds at most ${FRAME_DATA_MAX} bytes, not ${body.length}`);
  }
  const out = Buffer.allocUnsafe(HEAD + id.length + body.length);
  out.writeUInt32LE(out.length - 4, 0);
  out.writeUInt8(KIND_CODE[kind], 4);
  out.writeUInt32LE(attempt, 5);
  out.writeUInt16LE(id.length, 9);
  id.copy(out, HEAD);
  body.copy(out, HEAD + id.length);
  return out;
}

/** A file's bytes that are not what a stream file holds. */
export class StreamFormatError extends Error {
  override readonly name = 'StreamFormatError';
}

/**
 * Decodes frames from a buffer that holds a stream file's bytes from `start` (0: the file's
 * beginning, whose magic is checked and skipped). Returns the frames found and where the first
 * incomplete one begins (the next read starts there).
 */
export function decodeFrames(buf: Buffer, start: number): { frames: Frame[]; next: number } {
  let at = 0;
  if (start === 0) {
    if (buf.length < STREAM_MAGIC.length) return { frames: [], next: 0 };
    if (!buf.subarray(0, STREAM_MAGIC.length).equals(STREAM_MAGIC)) {
      throw new StreamFormatError('not an output stream file (no PFSTRM1 header)');
    }
    at = STREAM_MAGIC.length;
  }
  const frames: Frame[] = [];
  while (buf.length - at >= 4) {
    const size = buf.readUInt32LE(at);
    // checked before waiting for the rest: a damaged size must not make a follower wait forever
    if (size < HEAD - 4 || size > MAX_SIZE) throw bad(start + at, `frame of ${size} bytes`);
    if (buf.length - at - 4 < size) break;
    const code = buf.readUInt8(at + 4);
    const kind = KIND_OF[code];
    if (kind === undefined) throw bad(start + at, `frame kind ${code}`);
    const idLen = buf.readUInt16LE(at + 9);
    if (HEAD - 4 + idLen > size) throw bad(start + at, `uid of ${idLen} bytes in ${size}`);
    frames.push({
      kind,
      attempt: buf.readUInt32LE(at + 5),
      uid: buf.toString('utf8', at + HEAD, at + HEAD + idLen),
      data: buf.subarray(at + HEAD + idLen, at + 4 + size),
    });
    at += 4 + size;
  }
  return { frames, next: start + at };
}

function bad(offset: number, what: string): StreamFormatError {
  return new StreamFormatError(`damaged output stream at byte ${offset}: ${what}`);
}

/**
 * The stream file a helper writes after `file` once that one reached its rotation size:
 * `spawner.0.3.pfout` → `spawner.0.3-1.pfout` → `spawner.0.3-2.pfout` (a name's own parts
 * carry no '-'). A reader that read a part to its end and finds the next one there reads on
 * in it: the helper writes nothing more to a part once the next exists.
 */
export function nextStreamPart(file: string): string {
  const { base, part } = streamPartOf(file);
  return `${base}-${part + 1}.pfout`;
}

/** A stream file's name as its helper's first part's name (less `.pfout`) and its part number. */
export function streamPartOf(file: string): { base: string; part: number } {
  const m = /^(.*?)(?:-(\d+))?\.pfout$/.exec(file);
  return m === null ? { base: file, part: 0 } : { base: m[1]!, part: Number(m[2] ?? 0) };
}
