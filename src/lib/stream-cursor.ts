import * as path from 'node:path';
import { LazyFile } from './lazy-file';
import { localFiles, type SandboxFiles } from './sandbox-files';
import {
  FRAME_DATA_MAX,
  StreamFormatError,
  decodeFrames,
  streamPartOf,
  type Frame,
} from './output-frames';

/** Where a pilot's stream files are: `<pilot sandbox>/output/*.pfout` (output 'stream'). */
export const STREAM_DIR = 'output';
export const STREAM_EXT = '.pfout';

/** The directory of a pilot's stream files. */
export function streamDirOf(pilotSandbox: string): string {
  return path.join(pilotSandbox, STREAM_DIR);
}

/** The largest frame: size, kind, attempt, uid length, a uid of 0xffff bytes, full data. */
const MAX_FRAME = 4 + 1 + 4 + 2 + 0xffff + FRAME_DATA_MAX;

/**
 * Bytes read at a time. More than the largest frame, so that a frame that begins a chunk is
 * whole in it once the file holds it whole: a reader never waits on a frame bigger than its
 * buffer, and a file of any size is read through one buffer of this size.
 */
export const STREAM_CHUNK = 256 * 1024;
if (STREAM_CHUNK < MAX_FRAME) throw new RangeError('STREAM_CHUNK must hold the largest frame');

/**
 * The stream files in `dir` by name, each helper's parts in the order written (a helper's
 * rotated parts: nextStreamPart); none when it does not exist (yet).
 */
export async function listStreamFiles(
  dir: string,
  files: SandboxFiles = localFiles,
): Promise<string[]> {
  try {
    return (await files.list(dir)).filter((n) => n.endsWith(STREAM_EXT)).sort(byPart);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}

function byPart(a: string, b: string): number {
  const pa = streamPartOf(a);
  const pb = streamPartOf(b);
  if (pa.base !== pb.base) return pa.base < pb.base ? -1 : 1;
  return pa.part - pb.part;
}

/** A buffer a reader's cursors share (they read one at a time). */
export function chunkBuffer(): Buffer {
  return Buffer.allocUnsafe(STREAM_CHUNK);
}

/**
 * Reads one stream file's frames a chunk at a time, from where the last read stopped: the
 * file is never read whole, and a frame cut at the file's end (a writer mid-append) is read
 * again once it is whole. The frames' data are views of `buf` (nothing copied), valid until
 * the next read of any cursor that shares it.
 */
export class StreamCursor {
  private readonly lazy: LazyFile;
  /** Where the next frame starts. */
  private pos = 0;
  /** Bytes before this were looked at: from pos to here is a frame not whole yet. */
  private looked = 0;

  constructor(
    readonly file: string,
    private readonly buf: Buffer,
    files: SandboxFiles = localFiles,
  ) {
    this.lazy = new LazyFile(file, files);
  }

  /** How far the file was looked at: every whole frame before this was read. */
  get scanned(): number {
    return this.looked;
  }

  /** Whether the file holds bytes not looked at yet (a whole frame may be among them). */
  async unread(): Promise<boolean> {
    const fh = await this.lazy.handle();
    return fh !== undefined && (await fh.stat()).size > this.looked;
  }

  /**
   * The whole frames in the next chunk (none when nothing new is whole). Throws a
   * StreamFormatError naming the file when its bytes are not frames.
   */
  async read(): Promise<Frame[]> {
    const fh = await this.lazy.handle();
    if (fh === undefined) return [];
    const { size } = await fh.stat();
    if (size <= this.looked) return [];
    const len = Math.min(size - this.pos, this.buf.length);
    const { bytesRead } = await fh.read(this.buf, 0, len, this.pos);
    let decoded: { frames: Frame[]; next: number };
    try {
      decoded = decodeFrames(this.buf.subarray(0, bytesRead), this.pos);
    } catch (e) {
      if (e instanceof StreamFormatError) throw new StreamFormatError(`${this.file}: ${e.message}`);
      throw e;
    }
    this.looked = this.pos + bytesRead;
    this.pos = decoded.next;
    return decoded.frames;
  }

  close(): Promise<void> {
    return this.lazy.close();
  }
}
