import * as path from 'node:path';
import { StreamFormatError, type Frame } from './output-frames';
import { localFiles, type SandboxFiles } from './sandbox-files';
import { StreamCursor, chunkBuffer, listStreamFiles } from './stream-cursor';

/** What a pass over stream files does with the frames it reads. */
export interface FrameSink {
  /** Whether the frames of this task attempt are wanted (the others are skipped, not copied). */
  wants(uid: string, attempt: number): boolean;
  /** A wanted frame; its data is a view of the reader's buffer, valid during the call only. */
  frame(f: Frame): void;
  /** After each chunk: a moment to hand on what the frames made (e.g. write it out). */
  flush(): Promise<void>;
}

/**
 * Reads every stream file in `dir` once, from its start to the size it had when its turn
 * came (frames a live writer appends later are left for another pass), a chunk at a time, and
 * hands the wanted frames to `sink` in file order. A file whose bytes are not frames gives the
 * frames before the damage, and the pass goes on with the next file (one damaged file hides no
 * other's tasks): returns a StreamFormatError naming each such file.
 */
export async function passStreamDir(
  dir: string,
  sink: FrameSink,
  files: SandboxFiles = localFiles,
): Promise<StreamFormatError[]> {
  const buf = chunkBuffer();
  const damaged: StreamFormatError[] = [];
  for (const name of await listStreamFiles(dir, files)) {
    const file = path.join(dir, name);
    const cursor = new StreamCursor(file, buf, files);
    try {
      const size = await sizeOf(file, files);
      for (let at = -1; cursor.scanned < size && cursor.scanned > at;) {
        at = cursor.scanned;
        for (const f of await cursor.read()) if (sink.wants(f.uid, f.attempt)) sink.frame(f);
        await sink.flush();
      }
    } catch (e) {
      if (!(e instanceof StreamFormatError)) throw e;
      damaged.push(e);
    } finally {
      await cursor.close();
    }
  }
  return damaged;
}

/** A file's size; 0 when it is gone. */
async function sizeOf(file: string, files: SandboxFiles): Promise<number> {
  try {
    const fh = await files.open(file);
    try {
      return (await fh.stat()).size;
    } finally {
      await fh.close();
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw e;
  }
}
