import * as fs from 'node:fs/promises';
import { Writable } from 'node:stream';

/** Why a log file lost lines, as fileLogger's owner is told once per spell of failures. */
export interface LogFileFailure {
  file: string;
  /** The errno of the failed write (ENOSPC on a full disk). */
  errno: string;
  message: string;
}

/**
 * A JSON-lines log file that a failing disk cannot break: a write that fails (a full disk)
 * drops its lines, counted, instead of erroring the stream, and leaves no torn line (the file
 * is cut back). Writes stop for `retryMs`, then the next one tries again; once one succeeds,
 * it first writes a line saying how many were dropped and why. So the stream always finishes.
 */
export class LogFile extends Writable {
  private fh: fs.FileHandle | undefined;
  /** Size of the file as far as this stream wrote it whole (it is cut back to this). */
  private size = -1;
  /** Lines dropped in all, and since the last write that succeeded. */
  private droppedTotal = 0;
  private droppedSince = 0;
  private failing: { errno: string; retryAt: number } | undefined;
  /** A failed write left part of a line that a cut did not remove: the next write ends it. */
  private torn = false;

  constructor(
    readonly file: string,
    private readonly mode: number,
    private readonly onFailure: (f: LogFileFailure) => void = () => undefined,
    private readonly retryMs = 5_000,
  ) {
    super({ decodeStrings: true });
  }

  /** Lines that could not be written. */
  get dropped(): number {
    return this.droppedTotal;
  }

  override _writev(
    chunks: { chunk: Buffer; encoding: BufferEncoding }[],
    callback: (error?: Error | null) => void,
  ): void {
    void this.append(
      chunks.map((c) => c.chunk),
      chunks.length,
    ).then(() => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    const fh = this.fh;
    this.fh = undefined;
    void (fh?.close() ?? Promise.resolve()).then(
      () => callback(),
      () => callback(),
    );
  }

  private async append(lines: Buffer[], count: number): Promise<void> {
    const f = this.failing;
    if (f !== undefined && Date.now() < f.retryAt) {
      this.drop(count);
      return;
    }
    const parts = f === undefined ? lines : [this.droppedNote(f.errno), ...lines];
    if (this.torn) parts.unshift(Buffer.from('\n'));
    const data = Buffer.concat(parts);
    try {
      this.fh ??= await this.open();
      if (this.torn) this.size = (await this.fh.stat()).size;
      await this.writeAll(this.fh, data);
      this.torn = false;
      this.failing = undefined;
      this.droppedSince = 0;
    } catch (e) {
      this.drop(count);
      const errno = (e as { code?: unknown }).code;
      const failure = {
        file: this.file,
        errno: typeof errno === 'string' ? errno : 'EIO',
        message: (e as Error).message,
      };
      if (f === undefined) this.onFailure(failure);
      this.failing = { errno: failure.errno, retryAt: Date.now() + this.retryMs };
    }
  }

  private async open(): Promise<fs.FileHandle> {
    const fh = await fs.open(this.file, 'a', this.mode);
    try {
      this.size = (await fh.stat()).size;
    } catch (e) {
      await fh.close();
      throw e;
    }
    return fh;
  }

  /** Writes `data` whole, or cuts the file back to where it was and throws. */
  private async writeAll(fh: fs.FileHandle, data: Buffer): Promise<void> {
    let off = 0;
    try {
      while (off < data.length) off += (await fh.write(data, off)).bytesWritten;
      this.size += data.length;
    } catch (e) {
      if (off > 0) {
        await fh.truncate(this.size).then(
          () => undefined,
          () => (this.torn = true),
        );
      }
      throw e;
    }
  }

  private drop(count: number): void {
    this.droppedTotal += count;
    this.droppedSince += count;
  }

  private droppedNote(errno: string): Buffer {
    const note = {
      level: 'warn',
      message: 'log lines dropped',
      dropped: this.droppedSince,
      errno,
      timestamp: new Date().toISOString(),
    };
    return Buffer.from(JSON.stringify(note) + '\n');
  }
}
