import { LazyFile } from './lazy-file';
import { LineSplitter } from './line-splitter';
import { localFiles, type SandboxFiles } from './sandbox-files';

/** Bytes read per call: a big file is handed on in pieces, not read whole into memory. */
const CHUNK = 64 * 1024;

/**
 * Reads a growing file as lines, from its start: each `read()` returns the complete lines
 * written since the last one (without their '\n'), `rest()` the partial last line once the
 * writer is done. A file that does not exist yet reads as empty; one that got shorter (a
 * writer that truncated it and started again) is read again from its start.
 */
export class FileLines {
  private readonly lazy: LazyFile;
  private pos = 0;
  private readonly splitter = new LineSplitter();

  constructor(
    readonly file: string,
    files: SandboxFiles = localFiles,
  ) {
    this.lazy = new LazyFile(file, files);
  }

  /** Complete lines written since the last call (at most about CHUNK bytes of them). */
  async read(): Promise<string[]> {
    const fh = await this.lazy.handle();
    if (fh === undefined) return [];
    const { size } = await fh.stat();
    if (size < this.pos) {
      this.pos = 0;
      this.splitter.reset();
    }
    if (size === this.pos) return [];
    const buf = Buffer.alloc(Math.min(size - this.pos, CHUNK));
    const { bytesRead } = await fh.read(buf, 0, buf.length, this.pos);
    this.pos += bytesRead;
    return this.splitter.push(buf.subarray(0, bytesRead));
  }

  /** Whether bytes are left to read now (read() returns at most a chunk at a time). */
  async more(): Promise<boolean> {
    const fh = await this.lazy.handle();
    return fh !== undefined && (await fh.stat()).size > this.pos;
  }

  /** The partial last line (no '\n' after it), once; undefined when there is none. */
  rest(): string | undefined {
    return this.splitter.rest();
  }

  close(): Promise<void> {
    return this.lazy.close();
  }
}
