import { chmodSync, closeSync, openSync, writeSync } from 'node:fs';
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

/**
 * Writes tasks' output as files mode would have laid it out: `<root>/<uid>/stdout` and
 * `stderr` (files 0600, directories 0700). A task's files are made (empty, or emptied) when it is
 * first met, so a task that wrote nothing has both; its bytes are appended as they come, through
 * a bounded number of open files.
 */
export class OutFiles {
  /** Open descriptors by `uid/stream`, least recently used first. */
  private readonly fds = new Map<string, number>();
  private readonly made = new Set<string>();

  constructor(readonly root: string) {}

  /** The task's directory, made with both its files empty, once. */
  start(uid: string): string {
    const dir = path.join(this.root, uid);
    if (this.made.has(uid)) return dir;
    makePrivateDir(dir);
    for (const s of STREAMS) {
      const file = path.join(dir, s);
      closeSync(openSync(file, 'w', PRIVATE_FILE));
      chmodSync(file, PRIVATE_FILE);
    }
    this.made.add(uid);
    return dir;
  }

  /** Tasks whose files were made. */
  get tasks(): number {
    return this.made.size;
  }

  has(uid: string): boolean {
    return this.made.has(uid);
  }

  data(uid: string, stream: Stream, bytes: Buffer): void {
    const fd = this.fd(uid, stream);
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at, bytes.length - at);
  }

  /** The task's output is complete: its files are closed. */
  end(uid: string): void {
    for (const s of STREAMS) this.release(`${uid}/${s}`);
  }

  closeAll(): void {
    for (const key of [...this.fds.keys()]) this.release(key);
  }

  private fd(uid: string, stream: Stream): number {
    const key = `${uid}/${stream}`;
    let fd = this.fds.get(key);
    if (fd !== undefined) {
      this.fds.delete(key); // to the most recently used end
    } else {
      const oldest = this.fds.keys().next();
      if (this.fds.size >= MAX_OPEN && oldest.done !== true) this.release(oldest.value);
      fd = openSync(path.join(this.start(uid), stream), 'a', PRIVATE_FILE);
    }
    this.fds.set(key, fd);
    return fd;
  }

  private release(key: string): void {
    const fd = this.fds.get(key);
    if (fd === undefined) return;
    this.fds.delete(key);
    closeSync(fd);
  }
}
