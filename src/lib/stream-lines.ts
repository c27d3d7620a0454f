import * as path from 'node:path';
import { LineSplitter } from './line-splitter';
import { nextStreamPart } from './output-frames';
import { localFiles, type SandboxFiles } from './sandbox-files';
import { StreamCursor, chunkBuffer, listStreamFiles } from './stream-cursor';

/**
 * Reads one task attempt's stdout (or stderr) as lines from a pilot's stream files (output
 * 'stream', src/lib/output-frames.ts), as FileLines reads a task's own file: each `read()`
 * returns the complete lines written since the last one (without their '\n'), `rest()` the
 * partial last line once the writer is done. The task's frames are all in one of the
 * directory's `*.pfout` files, interleaved with other tasks' frames: until the first of them
 * is found, every file is scanned from where its last scan stopped (files that appear later
 * too); from then on only that file is read. `complete` turns true at the task's end frame.
 */
export class StreamLines {
  /** The files scanned so far, while the task's one is not known. */
  private readonly scans = new Map<string, StreamCursor>();
  /** The file that holds the task's frames, once found. */
  private home: StreamCursor | undefined;
  private readonly buf = chunkBuffer();
  private readonly splitter = new LineSplitter();
  private ended = false;
  private closed = false;

  constructor(
    readonly dir: string,
    readonly uid: string,
    readonly attempt: number,
    readonly stream: 'stdout' | 'stderr',
    private readonly files: SandboxFiles = localFiles,
  ) {}

  /** The task's end frame was read: its output is complete and read. */
  get complete(): boolean {
    return this.ended;
  }

  /** The file the task's frames are in, once one was found. */
  get file(): string | undefined {
    return this.home?.file;
  }

  /** Complete lines written since the last call (from at most one chunk of a file). */
  async read(): Promise<string[]> {
    const cursor = await this.next();
    if (cursor === undefined) return [];
    let text = '';
    for (const f of await cursor.read()) {
      if (f.attempt !== this.attempt || f.uid !== this.uid) continue;
      if (this.home === undefined) await this.settle(cursor);
      if (f.kind === 'end') {
        this.ended = true;
        await this.home?.close();
        break;
      }
      if (f.kind === this.stream) text += this.splitter.decode(f.data);
    }
    return this.splitter.lines(text);
  }

  /** Whether bytes are left to read now (read() reads at most a chunk at a time). */
  async more(): Promise<boolean> {
    return (await this.next()) !== undefined;
  }

  /** The partial last line (no '\n' after it), once; undefined when there is none. */
  rest(): string | undefined {
    return this.splitter.rest();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.home?.close();
    await this.dropScans();
  }

  /** The file to read next: the task's own, else the first scan with unread bytes. */
  private async next(): Promise<StreamCursor | undefined> {
    if (this.ended || this.closed) return undefined;
    if (this.home !== undefined) return this.homeNext();
    const caughtUp = await this.firstUnread();
    if (caughtUp !== undefined) return caughtUp;
    // every known file read to its end: look for files that appeared since
    let added = false;
    for (const name of await listStreamFiles(this.dir, this.files)) {
      if (this.closed || this.scans.has(name)) continue;
      this.scans.set(name, new StreamCursor(path.join(this.dir, name), this.buf, this.files));
      added = true;
    }
    return added ? this.firstUnread() : undefined;
  }

  /**
   * The task's file while it has unread bytes; once read to its end, its next part if that
   * exists (its helper rotated: nothing more is written to a part once the next exists, so
   * one look after seeing the next part finds all it holds).
   */
  private async homeNext(): Promise<StreamCursor | undefined> {
    const home = this.home!;
    if (await home.unread()) return home;
    const next = nextStreamPart(home.file);
    if (!(await this.files.exists(next)) || (await home.unread())) {
      return (await home.unread()) ? home : undefined;
    }
    await home.close();
    this.home = new StreamCursor(next, this.buf, this.files);
    return this.homeNext();
  }

  private async firstUnread(): Promise<StreamCursor | undefined> {
    for (const c of this.scans.values()) if (await c.unread()) return c;
    return undefined;
  }

  /** The task's frames are in `cursor`'s file: the other files need no more reading. */
  private async settle(cursor: StreamCursor): Promise<void> {
    this.scans.delete(path.basename(cursor.file));
    this.home = cursor;
    await this.dropScans();
  }

  private async dropScans(): Promise<void> {
    const all = [...this.scans.values()];
    this.scans.clear();
    for (const c of all) await c.close();
  }
}
