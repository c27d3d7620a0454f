import { closeSync, fchmodSync, openSync, writeSync, writevSync } from 'node:fs';
import { once } from 'node:events';
import * as path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { PRIVATE_FILE, makePrivateDir } from '../lib/private-files';

export type Stream = 'stdout' | 'stderr';
export const STREAMS: readonly Stream[] = ['stdout', 'stderr'];

/** How `pilotfish logs` prints a line of a task. */
export type LineFormat = (uid: string, attempt: number, line: string) => string;

/**
 * Turns tasks' bytes into lines and prints them (on `out`), a task's UTF-8 kept whole across
 * frames; lines are gathered and written once per flush, waiting for a full pipe to drain.
 */
export class LinePrinter {
  private pending: string[] = [];
  private readonly open = new Map<string, { decoder: StringDecoder; partial: string }>();

  constructor(
    private readonly format: LineFormat,
    private readonly out: NodeJS.WritableStream = process.stdout,
  ) {}

  /** Bytes of a task's stream, in order. */
  data(uid: string, attempt: number, bytes: Buffer): void {
    let t = this.open.get(uid);
    if (t === undefined) {
      t = { decoder: new StringDecoder('utf8'), partial: '' };
      this.open.set(uid, t);
    }
    const lines = (t.partial + t.decoder.write(bytes)).split('\n');
    t.partial = lines.pop()!;
    for (const l of lines) this.pending.push(this.format(uid, attempt, l));
  }

  /** A whole line of a task (read from a file). */
  line(uid: string, attempt: number, line: string): void {
    this.pending.push(this.format(uid, attempt, line));
  }

  /** The task's output is complete: its partial last line, if any, is printed. */
  end(uid: string, attempt: number): void {
    const t = this.open.get(uid);
    if (t === undefined) return;
    this.open.delete(uid);
    const rest = t.partial + t.decoder.end();
    if (rest !== '') this.pending.push(this.format(uid, attempt, rest));
  }

  /** Ends every task still open (no end frame read: a live or killed writer). */
  endAll(attempts: (uid: string) => number): void {
    for (const uid of [...this.open.keys()]) this.end(uid, attempts(uid));
  }

  async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const text = this.pending.join('');
    this.pending = [];
    if (!this.out.write(text)) await once(this.out, 'drain');
  }
}

/** Open files at most: tasks whose end frame is missing keep theirs until the pass ends. */
const MAX_OPEN = 128;

/** Buffers per writev call (IOV_MAX on Linux). */
const IOV_MAX = 1024;

/**
 * Writes tasks' output as files mode would have laid it out: `<root>/<uid>/stdout` and
 * `stderr` (files 0600, directories 0700). A task's files are made (empty, or emptied) when it is
 * first met, so a task that wrote nothing has both. Its bytes are gathered until `flush` (once per
 * chunk read: they are views of the reader's buffer until then) and written with one writev per
 * file, through a bounded number of open files: a frame is often a line, a syscall per frame
 * would cost most of the time.
 */
export class OutFiles {
  /** Open descriptors by `uid/stream`, least recently used first. */
  private readonly fds = new Map<string, number>();
  private readonly made = new Set<string>();
  /** Bytes not written yet, by `uid/stream`. */
  private readonly pending = new Map<string, { uid: string; stream: Stream; bufs: Buffer[] }>();

  constructor(readonly root: string) {}

  /** The task's directory, made with both its files empty (and left open), once. */
  start(uid: string): string {
    const dir = path.join(this.root, uid);
    if (this.made.has(uid)) return dir;
    makePrivateDir(dir);
    this.made.add(uid);
    for (const s of STREAMS) this.keep(`${uid}/${s}`, this.open(dir, s, 'w'));
    return dir;
  }

  /** Tasks whose files were made. */
  get tasks(): number {
    return this.made.size;
  }

  /** Bytes of a task's stream, in order: a view that stays valid until the next flush. */
  data(uid: string, stream: Stream, bytes: Buffer): void {
    const key = `${uid}/${stream}`;
    const p = this.pending.get(key);
    if (p === undefined) this.pending.set(key, { uid, stream, bufs: [bytes] });
    else p.bufs.push(bytes);
  }

  /** Writes every byte gathered. */
  flush(): void {
    for (const key of [...this.pending.keys()]) this.write(key);
  }

  /** The task's output is complete: its bytes are written and its files closed. */
  end(uid: string): void {
    for (const s of STREAMS) {
      this.write(`${uid}/${s}`);
      this.release(`${uid}/${s}`);
    }
  }

  closeAll(): void {
    this.flush();
    for (const key of [...this.fds.keys()]) this.release(key);
  }

  private write(key: string): void {
    const p = this.pending.get(key);
    if (p === undefined) return;
    this.pending.delete(key);
    const fd = this.fd(p.uid, p.stream);
    for (let i = 0; i < p.bufs.length; i += IOV_MAX) {
      const bufs = p.bufs.slice(i, i + IOV_MAX);
      const size = bufs.reduce((n, b) => n + b.length, 0);
      const done = writevSync(fd, bufs);
      if (done === size) continue;
      // a short write (a full disk says so on the next one): the rest, one buffer
      const rest = Buffer.concat(bufs).subarray(done);
      for (let at = 0; at < rest.length;) at += writeSync(fd, rest, at, rest.length - at);
    }
  }

  private fd(uid: string, stream: Stream): number {
    const key = `${uid}/${stream}`;
    const dir = this.start(uid);
    const fd = this.fds.get(key);
    if (fd !== undefined) this.fds.delete(key); // to the most recently used end
    return this.keep(key, fd ?? this.open(dir, stream, 'a'));
  }

  /** Opens a file of the task's, its owner's alone (also one left by an earlier export). */
  private open(dir: string, stream: Stream, flags: 'w' | 'a'): number {
    const fd = openSync(path.join(dir, stream), flags, PRIVATE_FILE);
    fchmodSync(fd, PRIVATE_FILE);
    return fd;
  }

  /** Holds `fd` as the most recently used, closing the least recently used past MAX_OPEN. */
  private keep(key: string, fd: number): number {
    this.fds.set(key, fd);
    for (const [old] of this.fds) {
      if (this.fds.size <= MAX_OPEN) break;
      this.release(old);
    }
    return fd;
  }

  private release(key: string): void {
    const fd = this.fds.get(key);
    if (fd === undefined) return;
    this.fds.delete(key);
    closeSync(fd);
  }
}
