import * as fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';

/** What the writer does to the file on the event loop (node:fs; a test may count them). */
export interface InlineOps {
  writeSync(fd: number, buffer: Buffer, offset: number): number;
  fdatasyncSync(fd: number): void;
}

const nodeOps: InlineOps = {
  writeSync: (fd, buffer, offset) => fs.writeSync(fd, buffer, offset),
  fdatasyncSync: (fd) => fs.fdatasyncSync(fd),
};

/** statfs magic numbers of the file systems on this machine's own memory or disks. */
const LOCAL_FILE_SYSTEMS = new Set([
  0x01021994, // tmpfs
  0x858458f6, // ramfs
  0xef53, // ext2, ext3, ext4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0xf2f52010, // f2fs
]);

/** Whether `dir` is on a local file system (not NFS, Lustre, GPFS, ...: those may hang). */
export function onLocalFileSystem(dir: string): boolean {
  try {
    return LOCAL_FILE_SYSTEMS.has(fs.statfsSync(dir).type);
  } catch {
    return false;
  }
}

export interface DurableWriterOptions {
  /** Whether writes may be made on the event loop at all (see onLocalFileSystem). */
  inline: boolean;
  /**
   * `slowTries` writes and syncs in a row that each took longer than `slowMs` send the next ones
   * to the thread pool for a while (one alone may be the process losing its core, not the disk).
   */
  slowMs?: number;
  slowTries?: number;
  /** How long the first such while lasts; each slow try after one doubles it, up to maxAwayMs. */
  awayMs?: number;
  maxAwayMs?: number;
  now?: () => number;
  ops?: InlineOps;
}

/**
 * Appends a record and makes it durable (write, then fdatasync) before it resolves, either on
 * the event loop or in libuv's thread pool. Each thread-pool call wakes a pool thread and then
 * the loop again, and on a virtual machine each wake-up costs tens of microseconds of CPU and
 * of latency: on a file system that syncs at once (tmpfs, or a disk whose cache acknowledges
 * at once) that is nearly all the cost of a group commit. So the writer works on the event loop
 * while a write and its sync together stay under `slowMs`; `slowTries` in a row that take
 * longer (a disk that really syncs) send the next ones to the thread pool for `awayMs`, after
 * which one is tried on the loop again, the while doubling each time that try is slow too. A network file system
 * may hang: there, everything goes to the thread pool (`inline: false`). Durability is the
 * same either way: the record is synced before the promise resolves.
 */
export class DurableWriter {
  private awayUntil = -Infinity;
  private away: number;
  private readonly slowMs: number;
  private readonly slowTries: number;
  private slowInARow = 0;
  private readonly maxAwayMs: number;
  private readonly now: () => number;
  private readonly ops: InlineOps;

  constructor(private readonly opts: DurableWriterOptions) {
    this.slowMs = opts.slowMs ?? 2;
    this.slowTries = opts.slowTries ?? 3;
    this.away = opts.awayMs ?? 10_000;
    this.maxAwayMs = opts.maxAwayMs ?? 300_000;
    this.now = opts.now ?? (() => performance.now());
    this.ops = opts.ops ?? nodeOps;
  }

  /** Whether the next write is made on the event loop. */
  get inline(): boolean {
    return this.opts.inline && this.now() >= this.awayUntil;
  }

  async write(fh: FileHandle, record: Buffer): Promise<void> {
    if (!this.inline) {
      for (let off = 0; off < record.length;) {
        off += (await fh.write(record, off)).bytesWritten;
      }
      await fh.datasync();
      return;
    }
    const t0 = this.now();
    for (let off = 0; off < record.length;) {
      off += this.ops.writeSync(fh.fd, record, off);
    }
    this.ops.fdatasyncSync(fh.fd);
    const t1 = this.now();
    if (t1 - t0 <= this.slowMs) {
      this.slowInARow = 0;
      return;
    }
    // back from a while away, one slow try is enough to go again
    const wasAway = this.awayUntil > -Infinity;
    if (++this.slowInARow < this.slowTries && !wasAway) return;
    this.slowInARow = 0;
    if (wasAway) this.away = Math.min(this.away * 2, this.maxAwayMs);
    this.awayUntil = t1 + this.away;
  }
}
