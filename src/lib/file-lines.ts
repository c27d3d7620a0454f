import { promises as fsp } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

/** Bytes read per call: a big file is handed on in pieces, not read whole into memory. */
const CHUNK = 64 * 1024;

/**
 * Reads a growing file as lines, from its start: each `read()` returns the complete lines
 * written since the last one (without their '\n'), `rest()` the partial last line once the
 * writer is done. A file that does not exist yet reads as empty; one that got shorter (a
 * writer that truncated it and started again) is read again from its start.
 */
export class FileLines {
  private fh: fsp.FileHandle | undefined;
  private pos = 0;
  private partial = '';
  private decoder = new StringDecoder('utf8');
  private closed = false;

  constructor(readonly file: string) {}

  /** Complete lines written since the last call (at most about CHUNK bytes of them). */
  async read(): Promise<string[]> {
    const fh = await this.open();
    if (fh === undefined) return [];
    const { size } = await fh.stat();
    if (size < this.pos) {
      this.pos = 0;
      this.partial = '';
      this.decoder = new StringDecoder('utf8');
    }
    if (size === this.pos) return [];
    const buf = Buffer.alloc(Math.min(size - this.pos, CHUNK));
    const { bytesRead } = await fh.read(buf, 0, buf.length, this.pos);
    this.pos += bytesRead;
    const lines = (this.partial + this.decoder.write(buf.subarray(0, bytesRead))).split('\n');
    this.partial = lines.pop()!;
    return lines;
  }

  /** Whether bytes are left to read now (read() returns at most a chunk at a time). */
  async more(): Promise<boolean> {
    const fh = await this.open();
    return fh !== undefined && (await fh.stat()).size > this.pos;
  }

  /** The partial last line (no '\n' after it), once; undefined when there is none. */
  rest(): string | undefined {
    const rest = this.partial + this.decoder.end();
    this.partial = '';
    return rest === '' ? undefined : rest;
  }

  async close(): Promise<void> {
    this.closed = true;
    const fh = this.fh;
    this.fh = undefined;
    await fh?.close();
  }

  private async open(): Promise<fsp.FileHandle | undefined> {
    if (this.fh !== undefined || this.closed) return this.fh;
    try {
      this.fh = await fsp.open(this.file, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    if (this.closed) await this.close();
    return this.fh;
  }
}
