import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { coerceError, UsageError } from '../errors';
import { errnoOf } from '../lib/errno-text';
import type { Logger } from '../lib/logger';
import { PRIVATE_FILE } from '../lib/private-files';
import type { Notification } from '../states/notification';
import { decodeNotifications, encodeNotifications } from './notification-codec';

/** Where an UpdateWorker puts what it cannot keep in memory (UpdateWorkerOptions.spill). */
export interface SpillOptions {
  /** The directory of the spill file (an agent's pilot sandbox, the client's session directory). */
  dir: string;
  /**
   * Notifications waiting in memory (not in flight) beyond which the rest go to the spill file
   * (default 50,000: some 7 MB of notification objects, about 130 bytes each).
   */
  memoryLimit?: number;
}

export const DEFAULT_MEMORY_LIMIT = 50_000;
/** A spill write after a failed one waits this long (a full disk is not retried every turn). */
const DEFAULT_RETRY_MS = 1_000;
/** Most bytes one push writes of a backlog of unwritten frames: a short block of the loop. */
const WRITE_MAX_BYTES = 8 * 2 ** 20;
/** Least bytes one read back asks for: a few frames. */
const READ_MIN_BYTES = 64 * 2 ** 10;
/** Each frame: its payload's byte length, little-endian, then the payload. */
const HEADER_BYTES = 4;

export interface SpillQueueOptions {
  /** Where to spill; none: everything stays in memory (the queue is a plain FIFO). */
  spill?: SpillOptions;
  /** Part of the file's name: `updates-spill.<name>.<random>`. */
  name: string;
  /** Most notifications in one frame of the file (the worker's batch size). */
  frameSize: number;
  log: Logger;
  /** Wait before a spill write is tried again after one failed (default 1 s). */
  retryMs?: number;
}

interface Frame {
  bytes: Buffer;
  count: number;
}

/**
 * The notifications an UpdateWorker holds and has not sent, first in first out: a memory part
 * up to `memoryLimit`, and behind it a spill file. Once anything is spilled, later arrivals go
 * behind it in the file until it is read back, so the order handed over is the order taken.
 * The file (mode 0600, a name of its own) holds frames of at most `frameSize` notifications in
 * the store's tuple encoding; it is read back a chunk at a time and removed once drained.
 *
 * The file is written and read synchronously: a write is what one push spilled (the worker
 * is handed one bulk per turn), goes to the page cache and happens only while the store is
 * behind by `memoryLimit`; a read is about the batch being sent. An asynchronous file would
 * cost the same encoding on the loop and need an order kept across writes under way.
 *
 * A write that fails (a full disk, a missing directory) keeps its frames in memory, behind the
 * file (nothing is dropped), is logged once with the errno and path, and is tried again at a
 * push after `retryMs`.
 */
export class SpillQueue {
  readonly file: string | undefined;
  private readonly limit: number;
  private readonly retryMs: number;
  /** The head: notifications in memory, from index `head` on. */
  private mem: Notification[] = [];
  private head = 0;
  private fd: number | undefined;
  private readAt = 0;
  private writeAt = 0;
  /** Notifications in the file not read back yet. */
  private inFile = 0;
  /** Frames behind the file's, not written yet (a write failed, or a backlog past the cap). */
  private unwritten: Frame[] = [];
  private inUnwritten = 0;
  /** Bytes per notification written so far, to size the reads. */
  private written = { bytes: 0, count: 0 };
  private failing: { errno: string; retryAt: number } | undefined;
  private lostCount = 0;

  constructor(private readonly opts: SpillQueueOptions) {
    const spill = opts.spill;
    this.limit = spill?.memoryLimit ?? DEFAULT_MEMORY_LIMIT;
    if (!Number.isSafeInteger(this.limit) || this.limit < 0) {
      throw new UsageError(`spill.memoryLimit must be an integer >= 0, got ${spill?.memoryLimit}`);
    }
    this.retryMs = opts.retryMs ?? DEFAULT_RETRY_MS;
    if (spill !== undefined) {
      if (spill.dir === '') throw new UsageError('spill.dir must name a directory, got ""');
      const name = opts.name.replace(/[^A-Za-z0-9._-]/g, '_');
      this.file = path.join(spill.dir, `updates-spill.${name}.${randomBytes(4).toString('hex')}`);
    }
  }

  /** Notifications held, in memory and in the file. */
  get length(): number {
    return this.mem.length - this.head + this.inFile + this.inUnwritten;
  }

  /** Notifications held in memory (frames not written included). */
  get held(): number {
    return this.mem.length - this.head + this.inUnwritten;
  }

  /** Notifications in the spill file now. */
  get spilled(): number {
    return this.inFile;
  }

  /** Whether the next one to take is in memory (not in the file). */
  get headInMemory(): boolean {
    return this.mem.length > this.head;
  }

  /** Notifications spilled that could not be read back (logged at error when it happened). */
  get lost(): number {
    return this.lostCount;
  }

  push(ns: readonly Notification[]): void {
    let at = 0;
    if (this.inFile + this.inUnwritten === 0) {
      const room = this.file === undefined ? ns.length : this.limit - this.held;
      for (const end = Math.min(ns.length, Math.max(0, room)); at < end; at++) {
        this.mem.push(ns[at]!);
      }
    }
    if (at === ns.length) return;
    for (; at < ns.length; at += this.opts.frameSize) {
      const part = ns.slice(at, at + this.opts.frameSize);
      const payload = encodeNotifications(part);
      const bytes = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
      bytes.writeUInt32LE(payload.length, 0);
      payload.copy(bytes, HEADER_BYTES);
      this.unwritten.push({ bytes, count: part.length });
      this.inUnwritten += part.length;
    }
    this.write();
  }

  /** Takes up to `max` notifications from the front, reading the file back as it comes to it. */
  shift(max: number): Notification[] {
    const fromMem = Math.min(max, this.mem.length - this.head);
    const out = this.mem.slice(this.head, this.head + fromMem);
    this.head += fromMem;
    if (this.head === this.mem.length) {
      this.mem = [];
      this.head = 0;
    } else if (this.head > 4096 && this.head * 2 > this.mem.length) {
      this.mem = this.mem.slice(this.head);
      this.head = 0;
    }
    while (out.length < max && this.inFile + this.inUnwritten > 0) {
      // the memory part is empty here: what is read beyond `max` becomes it, in order
      const more = this.inFile > 0 ? this.read(max - out.length) : this.takeUnwritten();
      const n = Math.min(more.length, max - out.length);
      for (let i = 0; i < n; i++) out.push(more[i]!);
      if (n < more.length) this.mem = more.slice(n);
    }
    return out;
  }

  /** Drops what is held and removes the file. */
  close(): void {
    this.mem = [];
    this.head = 0;
    this.unwritten = [];
    this.inUnwritten = 0;
    this.inFile = 0;
    this.removeFile();
  }

  /** Writes the frames not written yet (up to WRITE_MAX_BYTES), unless a failure is recent. */
  private write(): void {
    const file = this.file!;
    if (this.failing !== undefined && performance.now() < this.failing.retryAt) return;
    let n = 0;
    let bytes = 0;
    let count = 0;
    for (; n < this.unwritten.length; n++) {
      const f = this.unwritten[n]!;
      if (n > 0 && bytes + f.bytes.length > WRITE_MAX_BYTES) break;
      bytes += f.bytes.length;
      count += f.count;
    }
    const frames = this.unwritten.slice(0, n);
    const buf =
      n === 1
        ? frames[0]!.bytes
        : Buffer.concat(
            frames.map((f) => f.bytes),
            bytes,
          );
    try {
      this.fd ??= openSync(file, 'wx+', PRIVATE_FILE);
      // at the end of what was written whole: a write cut short by a full disk is overwritten
      for (let off = 0; off < buf.length;) {
        off += writeSync(this.fd, buf, off, buf.length - off, this.writeAt + off);
      }
    } catch (e) {
      const errno = errnoOf(e);
      if (this.failing === undefined) {
        this.opts.log.warn('cannot spill notifications to disk: they stay in memory', {
          errno,
          path: file,
          held: this.held,
        });
      }
      this.failing = { errno, retryAt: performance.now() + this.retryMs };
      return;
    }
    if (this.failing !== undefined) {
      this.opts.log.info('spilling notifications to disk again', { path: file });
      this.failing = undefined;
    }
    this.writeAt += buf.length;
    this.written.bytes += buf.length;
    this.written.count += count;
    this.inFile += count;
    this.unwritten.splice(0, n);
    this.inUnwritten -= count;
  }

  /** Reads whole frames from the file, about `want` notifications' worth (at least one frame). */
  private read(want: number): Notification[] {
    const fd = this.fd!;
    const perNote = this.written.bytes / Math.max(1, this.written.count);
    const left = this.writeAt - this.readAt;
    const out: Notification[] = [];
    try {
      let buf = Buffer.allocUnsafe(
        Math.min(left, Math.max(READ_MIN_BYTES, Math.ceil(want * perNote))),
      );
      readFully(fd, buf, this.readAt);
      const first = HEADER_BYTES + buf.readUInt32LE(0);
      if (first > buf.length) {
        buf = Buffer.allocUnsafe(first);
        readFully(fd, buf, this.readAt);
      }
      let at = 0;
      while (at + HEADER_BYTES <= buf.length) {
        const end = at + HEADER_BYTES + buf.readUInt32LE(at);
        if (end > buf.length) break;
        const items = decodeNotifications(buf.subarray(at + HEADER_BYTES, end));
        if (!Array.isArray(items)) {
          throw new Error(`a frame at byte ${this.readAt + at} is no list`);
        }
        for (const n of items) out.push(n as Notification);
        at = end;
      }
      this.readAt += at;
      this.inFile -= out.length;
    } catch (e) {
      // the file was written by this process alone: a failure here is the disk's (EIO); the
      // frames decoded before it still go
      const lost = this.inFile - out.length;
      this.lostCount += lost;
      this.opts.log.error('spilled notifications cannot be read back: given up', {
        errno: errnoOf(e),
        error: coerceError(e).message,
        path: this.file,
        lost,
      });
      this.inFile = 0;
    }
    if (this.inFile === 0) this.removeFile();
    return out;
  }

  /** The oldest frame not written (the file is drained), decoded from memory. */
  private takeUnwritten(): Notification[] {
    const f = this.unwritten.shift()!;
    this.inUnwritten -= f.count;
    return decodeNotifications(f.bytes.subarray(HEADER_BYTES)) as Notification[];
  }

  private removeFile(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    this.readAt = 0;
    this.writeAt = 0;
    try {
      closeSync(fd);
      unlinkSync(this.file!);
    } catch (e) {
      this.opts.log.warn('spill file not removed', { errno: errnoOf(e), path: this.file });
    }
  }
}

function readFully(fd: number, buf: Buffer, position: number): void {
  for (let off = 0; off < buf.length;) {
    const n = readSync(fd, buf, off, buf.length - off, position + off);
    if (n === 0) throw new Error(`spill file ends at byte ${position + off}`);
    off += n;
  }
}
