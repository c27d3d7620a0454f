import { fileOp } from '../../transport/file-paths';
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { constants, promises as fsp, type Stats } from 'node:fs';
import * as path from 'node:path';
import { TransferError } from '../../errors';
import { PRIVATE_DIR, PRIVATE_FILE } from '../../lib/private-files';
import { chunkProblem } from '../../transport/transfer-flow';

interface Open {
  pilot: string;
  task: string;
  path: string;
  fh: fsp.FileHandle;
  /** Bytes served or written so far: the next chunk's offset. */
  next: number;
  /** The file's size at open (reads), or the size announced (writes). */
  size: number;
  hash: Hash;
  lastActive: number;
  /** Reads: the file as opened (a change while it is served fails the transfer). */
  stat?: Stats;
  /** Writes: the temporary file beside the target, renamed into place at commit. */
  tmp?: string;
}

/** A test's hook: sees (and may change) each chunk after it was hashed, before it is sent. */
export type ServedChunkHook = (chunk: Buffer, transfer: string) => void;

/**
 * The client's side of open transfers: a file handle per transfer, chunks served from it or
 * written to a temporary file in order, SHA-256 computed as they pass. Never a whole file in
 * memory. Who may open what is decided before (FileGrants); keys are `pilot` + transfer id, so a
 * pilot can only name its own transfers.
 */
export class ServedFiles {
  private readonly open = new Map<string, Open>();

  constructor(private readonly hook?: ServedChunkHook) {}

  /** Open transfers of `pilot`. */
  count(pilot: string): number {
    let n = 0;
    for (const o of this.open.values()) if (o.pilot === pilot) n++;
    return n;
  }

  async openRead(
    key: string,
    at: { pilot: string; task: string; now: number },
    file: string,
  ): Promise<{ size: number; mode: number }> {
    this.assertFree(key, file);
    // O_NONBLOCK: opening a FIFO must not block (it is then refused as not a regular file)
    const fh = await fileOp('read', `client file ${file}`, () =>
      fsp.open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY),
    );
    try {
      const stat = await fileOp('read', `client file ${file}`, () => fh.stat());
      regularFile('read', file, stat);
      this.open.set(key, {
        ...at,
        lastActive: at.now,
        path: file,
        fh,
        next: 0,
        size: stat.size,
        hash: createHash('sha256'),
        stat,
      });
      return { size: stat.size, mode: stat.mode & 0o7777 };
    } catch (e) {
      await fh.close();
      throw e;
    }
  }

  async read(key: string, now: number, offset: number, length: number): Promise<Buffer> {
    const o = this.get(key, 'read', now);
    const problem = chunkProblem(o.next, o.size, offset, length);
    if (problem !== undefined) throw transferError(o.path, problem);
    const buf = Buffer.allocUnsafe(length);
    const { bytesRead } = await fileOp('read', `client file ${o.path}`, () =>
      o.fh.read(buf, 0, length, offset),
    );
    if (bytesRead < length) throw changed(o.path, `it ended at ${offset + bytesRead} bytes`);
    o.next += length;
    o.hash.update(buf);
    this.hook?.(buf, key);
    return buf;
  }

  /**
   * Ends a read: what was served, if the file did not change meanwhile and, when the agent says
   * what it `received`, if that is what was served.
   */
  async endRead(
    key: string,
    now: number,
    received: { bytes?: number; sha256?: string } = {},
  ): Promise<{ bytes: number; sha256: string }> {
    const o = this.get(key, 'read', now);
    try {
      if (o.next !== o.size) throw transferError(o.path, `ended at ${o.next} of ${o.size} bytes`);
      const after = await fileOp('read', `client file ${o.path}`, () => o.fh.stat());
      if (after.size !== o.size || after.mtimeMs !== o.stat!.mtimeMs) {
        throw changed(o.path, `its size or modification time is not what it was at open`);
      }
      const sha256 = o.hash.digest('hex');
      if (received.sha256 !== undefined && received.sha256 !== sha256) {
        throw transferError(
          o.path,
          `checksum mismatch: served ${sha256}, the agent received ${received.sha256}`,
        );
      }
      if (received.bytes !== undefined && received.bytes !== o.next) {
        throw transferError(o.path, `${o.next} bytes served, the agent received ${received.bytes}`);
      }
      return { bytes: o.next, sha256 };
    } finally {
      await this.drop(key);
    }
  }

  /** Opens a temporary file (0600, never through a link) beside `file`, the write's target. */
  async openWrite(
    key: string,
    at: { pilot: string; task: string; now: number },
    file: string,
    size: number,
  ): Promise<void> {
    this.assertFree(key, file);
    const target = await fsp.lstat(file).catch(() => undefined);
    if (target?.isDirectory() === true) {
      throw new TransferError('EISDIR', `cannot write client file ${file}: it is a directory`);
    }
    // as for the other staging actions: missing parent directories are made, private
    await fileOp('write', `client folder ${path.dirname(file)}`, () =>
      fsp.mkdir(path.dirname(file), { recursive: true, mode: PRIVATE_DIR }),
    );
    const tmp = path.join(path.dirname(file), `.pf-${randomBytes(8).toString('hex')}.part`);
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
    const fh = await fileOp('write', `client file ${file}`, () =>
      fsp.open(tmp, flags, PRIVATE_FILE),
    );
    const hash = createHash('sha256');
    this.open.set(key, { ...at, lastActive: at.now, path: file, fh, next: 0, size, hash, tmp });
  }

  async write(key: string, now: number, offset: number, data: Buffer): Promise<void> {
    const o = this.get(key, 'write', now);
    const problem = chunkProblem(o.next, o.size, offset, data.length);
    if (problem !== undefined) throw transferError(o.path, problem);
    o.hash.update(data);
    for (let done = 0; done < data.length;) {
      const { bytesWritten } = await fileOp('write', `client file ${o.path}`, () =>
        o.fh.write(data, done, data.length - done, offset + done),
      );
      done += bytesWritten;
    }
    o.next += data.length;
  }

  /** Checks size and checksum, then moves the temporary file into place (0600). */
  async commit(
    key: string,
    now: number,
    bytes: number,
    sha256: string,
  ): Promise<{ bytes: number; sha256: string }> {
    const o = this.get(key, 'write', now);
    let done = false;
    try {
      if (bytes !== o.size || o.next !== o.size) {
        throw transferError(o.path, `${o.next} bytes arrived, ${bytes} sent, ${o.size} announced`);
      }
      const own = o.hash.digest('hex');
      if (own !== sha256) {
        throw transferError(o.path, `checksum mismatch: sent ${sha256}, received ${own}`);
      }
      await fileOp('write', `client file ${o.path}`, async () => {
        await o.fh.sync();
        await o.fh.chmod(PRIVATE_FILE);
        await o.fh.close();
        await fsp.rename(o.tmp!, o.path);
      });
      done = true;
      await syncDir(path.dirname(o.path));
      return { bytes, sha256 };
    } finally {
      this.open.delete(key);
      if (!done) await discard(o);
    }
  }

  /** Drops a transfer: closes its handle and removes its temporary file. */
  async drop(key: string): Promise<void> {
    const o = this.open.get(key);
    if (o === undefined) return;
    this.open.delete(key);
    await discard(o);
  }

  /** Keys of transfers idle since before `before`, or of `task` on `pilot` (any task if omitted). */
  keys(filter: { idleBefore?: number; pilot?: string; task?: string }): string[] {
    const out: string[] = [];
    for (const [k, o] of this.open) {
      if (filter.idleBefore !== undefined && o.lastActive >= filter.idleBefore) continue;
      if (filter.pilot !== undefined && o.pilot !== filter.pilot) continue;
      if (filter.task !== undefined && o.task !== filter.task) continue;
      out.push(k);
    }
    return out;
  }

  /** Whether the transfer `key` is open for `task` (a request must name its transfer's task). */
  taskOf(key: string): string | undefined {
    return this.open.get(key)?.task;
  }

  async close(): Promise<void> {
    await Promise.all([...this.open.keys()].map((k) => this.drop(k)));
  }

  private assertFree(key: string, file: string): void {
    if (this.open.has(key)) throw transferError(file, 'the transfer id is in use');
  }

  private get(key: string, kind: 'read' | 'write', now: number): Open {
    const o = this.open.get(key);
    if (o === undefined || (o.tmp !== undefined) !== (kind === 'write')) {
      throw new TransferError('E_TRANSFER', `no open ${kind} transfer ${key.split('\0')[1]}`);
    }
    o.lastActive = now;
    return o;
  }
}

async function discard(o: Open): Promise<void> {
  await o.fh.close().catch(() => undefined); // closed already after a failed rename
  if (o.tmp !== undefined) await fsp.unlink(o.tmp).catch(() => undefined);
}

function regularFile(what: string, file: string, stat: Stats): void {
  if (stat.isFile()) return;
  if (stat.isDirectory()) {
    throw new TransferError('EISDIR', `cannot ${what} client file ${file}: it is a directory`);
  }
  throw transferError(file, 'it is not a regular file');
}

function transferError(file: string, problem: string): TransferError {
  return new TransferError('E_TRANSFER', `transfer of client file ${file} failed: ${problem}`);
}

function changed(file: string, how: string): TransferError {
  return transferError(file, `the file changed while it was read (${how})`);
}

async function syncDir(dir: string): Promise<void> {
  const d = await fsp.open(dir, constants.O_RDONLY).catch(() => undefined);
  if (d === undefined) return;
  await d.sync().catch(() => undefined); // durability only: the rename is done
  await d.close();
}
