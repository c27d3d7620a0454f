import { localFiles, type ReadHandle, type SandboxFiles } from './sandbox-files';

/**
 * A file opened for reading on first use: a file that does not exist (yet) is no handle, and
 * is looked for again next time; once closed, it stays closed (a read racing a close gets no
 * handle, and one opened meanwhile is closed at once).
 */
export class LazyFile {
  private fh: ReadHandle | undefined;
  private closed = false;

  constructor(
    readonly file: string,
    private readonly files: SandboxFiles = localFiles,
  ) {}

  /** The open handle, or undefined while the file does not exist or after close. */
  async handle(): Promise<ReadHandle | undefined> {
    if (this.fh !== undefined || this.closed) return this.fh;
    try {
      this.fh = await this.files.open(this.file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    if (this.closed) await this.close();
    return this.fh;
  }

  async close(): Promise<void> {
    this.closed = true;
    const fh = this.fh;
    this.fh = undefined;
    await fh?.close();
  }
}
