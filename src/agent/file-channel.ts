import { createHash, randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import * as zmq from 'zeromq';
import type { FileReply, FileRequest } from '../generated';
import { coerceError, errorMeta, TransferError } from '../errors';
import { BadMessages } from '../lib/bad-messages';
import { systemClock, type Clock, type Timer } from '../lib/clock';
import type { Logger } from '../lib/logger';
import { parseFileReply, parseSandboxRequest } from '../lib/validate';
import type { TransferResult, Transfers } from '../components/shared/transfers';
import { decode, encode } from '../transport/codec';
import { clientOptions, type ClientSecurity } from '../transport/curve';
import { fileOp, normalPath, pathProblem } from '../transport/file-paths';
import { moveConnection } from '../transport/frames';
import { SandboxReads, writeSandboxToken } from './sandbox-reads';
import {
  CHUNK_BYTES,
  ChunkWindow,
  MAX_FILE_MESSAGE_BYTES,
  ProgressThrottle,
  WINDOW_CHUNKS,
  type Chunk,
} from '../transport/transfer-flow';

/** Told as a transfer advances: at its start, its end, and at most every ~1% and 250 ms. */
export type TransferProgress = (task: string, bytesDone: number, bytesTotal: number) => void;

export interface FileChannelOptions {
  /** The pilot's file socket (agent.json `addresses.files`). */
  address: string;
  /** The pilot's keys; absent only in an insecure session. */
  security?: ClientSecurity | undefined;
  session: string;
  pilot: string;
  log: Logger;
  clock?: Clock;
  chunkBytes?: number;
  /** Chunks outstanding per transfer. */
  window?: number;
  /** A request with no reply within this long fails its transfer (the client went away). */
  timeoutMs?: number;
  /** Tests only: sees each chunk sent after it was hashed (a flipped byte must be caught). */
  sentHook?: (chunk: Buffer) => void;
  /**
   * The pilot's sandbox: the client may read in it (and only in it) over this channel, for
   * the output of tasks whose sandbox it cannot see (SandboxReads). None: nothing is served.
   */
  sandbox?: string;
}

type Body = FileRequest extends infer R
  ? R extends FileRequest
    ? Omit<R, 'session' | 'pilot' | 'task' | 'transfer' | 'req'>
    : never
  : never;
type Answer = { header: FileReply; data?: Buffer | undefined };
interface Pending {
  resolve(a: Answer): void;
  reject(e: Error): void;
  timer: Timer;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** Sandbox requests answered at once; the client's readers ask one at a time each. */
const MAX_SERVING = 32;
const noop = (): void => undefined;

/**
 * The agent's side of the file channel: the `transfer` staging action over the session's own
 * connection. A DEALER to the pilot's file socket carries chunked reads and writes of client
 * files, a few chunks outstanding per transfer, each written to disk (or read from it) as it
 * goes, SHA-256 computed on both ends and compared. A fetched file appears under its name only
 * when complete (temporary file + rename). A client that stops answering fails the transfer
 * with E_TRANSFER once a request waited `timeoutMs`.
 */
export class FileChannel implements Transfers {
  private readonly sock: zmq.Dealer;
  private readonly pending = new Map<number, Pending>();
  private readonly loop: Promise<void>;
  private readonly listeners = new Set<TransferProgress>();
  private readonly bad: BadMessages;
  private readonly clock: Clock;
  private readonly timeoutMs: number;
  private sendChain: Promise<void> = Promise.resolve();
  private nextReq = 0;
  private closed = false;
  /** Where the socket connects: the pilot's file socket, moved where the client moved. */
  private at: string;
  private readonly reads: SandboxReads | undefined;
  /** Sandbox requests being answered (each reads a file): bounded, MAX_SERVING. */
  private serving = 0;

  constructor(private readonly opts: FileChannelOptions) {
    this.clock = opts.clock ?? systemClock;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.bad = new BadMessages(opts.log);
    if (opts.sandbox !== undefined) {
      // before the socket connects: a client that can ask finds the token there
      const problem = writeSandboxToken(opts.sandbox);
      if (problem !== undefined) opts.log.warn('no sandbox token', { problem });
      this.reads = new SandboxReads(opts.sandbox, opts.session, opts.pilot);
    }
    this.sock = new zmq.Dealer({
      linger: 0,
      maxMessageSize: MAX_FILE_MESSAGE_BYTES,
      sendTimeout: this.timeoutMs,
      // the client's socket addresses its requests to this agent by the pilot's uid
      routingId: opts.pilot,
      ...clientOptions(opts.security),
    });
    this.sock.connect(opts.address);
    this.at = opts.address;
    this.loop = this.receive();
  }

  /** Listens for progress of every transfer; returns how to stop. */
  onProgress(listener: TransferProgress): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async fetch(task: string, clientPath: string, localPath: string): Promise<TransferResult> {
    const client = clientFile(clientPath);
    const local = path.resolve(localPath);
    const what = `fetch of client file ${client} to ${local}`;
    const transfer = randomBytes(16).toString('hex');
    const ask = (body: Body): Promise<Answer> => this.request(task, transfer, body, what);
    const opened = await ask({ op: 'open_read', path: client });
    const size = opened.header.size ?? 0;
    const tmp = path.join(path.dirname(local), `.pf-${transfer}.part`);
    let fh: fsp.FileHandle | undefined;
    try {
      fh = await fileOp('write', local, () => fsp.open(tmp, 'wx', 0o600));
      const hash = createHash('sha256');
      await this.windowed(
        task,
        size,
        (c) => ask({ op: 'read', ...c }),
        async (c, a) => {
          if (a.data?.length !== c.length) {
            throw failure(`${what}: a chunk of ${a.data?.length ?? 0} bytes, not ${c.length}`);
          }
          hash.update(a.data);
          await fileOp('write', local, () => writeAll(fh!, a.data!, c.offset));
        },
      );
      const sha256 = hash.digest('hex');
      // private like all the session writes; executable if the client's file was (a script)
      const mode = ((opened.header.mode ?? 0) & 0o100) !== 0 ? 0o700 : 0o600;
      // on disk before the client checks the checksum (and tells its user the transfer is
      // done), so that only the rename is left after
      await fileOp('write', local, async () => {
        await fh!.sync();
        await fh!.chmod(mode);
        await fh!.close();
        fh = undefined;
      });
      const end = (await ask({ op: 'end_read', bytes: size, sha256 })).header;
      if (end.sha256 !== sha256 || end.bytes !== size) {
        throw failure(`${what}: checksum mismatch: the client read ${end.sha256}, got ${sha256}`);
      }
      await fileOp('write', local, () => fsp.rename(tmp, local));
      return { bytes: size, sha256 };
    } catch (e) {
      await fh?.close().catch(noop);
      await fsp.unlink(tmp).catch(noop);
      this.abort(task, transfer, what);
      throw e;
    }
  }

  async send(task: string, localPath: string, clientPath: string): Promise<TransferResult> {
    const client = clientFile(clientPath);
    const local = path.resolve(localPath);
    const what = `send of ${local} to client file ${client}`;
    const transfer = randomBytes(16).toString('hex');
    const ask = (body: Body, data?: Buffer, waitMs?: number): Promise<Answer> =>
      this.request(task, transfer, body, what, data, waitMs);
    const fh = await fileOp('read', local, () => fsp.open(local, 'r'));
    let opened = false;
    try {
      const before = await fileOp('read', local, () => fh.stat());
      if (!before.isFile()) throw new TransferError('EISDIR', `cannot read ${local}: not a file`);
      const size = before.size;
      await ask({ op: 'open_write', path: client, size });
      opened = true;
      const hash = createHash('sha256');
      // chunks are read one after another, so they are hashed and sent in order
      let reading: Promise<unknown> = Promise.resolve();
      // a chunk's buffer is used again once the client answered it (ZeroMQ sends buffers
      // without copying; once answered, it was sent): a window of buffers, not a GC's worth
      const spare: Buffer[] = [];
      const inUse = new Map<number, Buffer>();
      const chunkBytes = this.opts.chunkBytes ?? CHUNK_BYTES;
      const readThenSend = async (c: Chunk): Promise<Answer> => {
        const whole = spare.pop() ?? Buffer.allocUnsafe(chunkBytes);
        inUse.set(c.offset, whole);
        const buf = whole.subarray(0, c.length);
        const read = () => fileOp('read', local, () => fh.read(buf, 0, c.length, c.offset));
        const turn = reading.then(read);
        reading = turn.catch(noop);
        if ((await turn).bytesRead < c.length) {
          throw failure(`${what}: the file changed while it was sent`);
        }
        hash.update(buf);
        this.opts.sentHook?.(buf);
        return ask({ op: 'write', offset: c.offset }, buf);
      };
      const answered = (c: Chunk): Promise<void> => {
        spare.push(inUse.get(c.offset)!);
        inUse.delete(c.offset);
        return Promise.resolve();
      };
      await this.windowed(task, size, readThenSend, answered);
      const after = await fileOp('read', local, () => fh.stat());
      if (after.size !== size || after.mtimeMs !== before.mtimeMs) {
        throw failure(`${what}: the file changed while it was sent`);
      }
      const sha256 = hash.digest('hex');
      opened = false; // a failed commit removes the client's temporary file itself
      // the client flushes the whole file to disk before it answers: allow 10 MiB/s for that
      await ask(
        { op: 'commit', bytes: size, sha256 },
        undefined,
        this.timeoutMs + size / 10_485.76,
      );
      return { bytes: size, sha256 };
    } catch (e) {
      if (opened) this.abort(task, transfer, what);
      throw e;
    } finally {
      await fh.close().catch(noop);
    }
  }

  /**
   * Connects to the client's file socket at `address` instead (its client listens elsewhere
   * now); a request on the way to the old one is unanswered and fails its transfer at its
   * timeout, as it would with the client gone.
   */
  move(address: string): void {
    this.at = moveConnection(this.sock, this.at, address);
  }

  /** Fails every transfer under way (E_TRANSFER) and closes the socket. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const [req, p] of this.pending) {
      this.pending.delete(req);
      p.timer.cancel();
      p.reject(failure('the file channel was closed'));
    }
    this.sock.close();
    await this.loop;
  }

  /**
   * Asks for the chunks of `total` bytes, `window` at a time, and takes their answers in order:
   * at most a window of chunks is held, whatever the file's size.
   */
  private async windowed(
    task: string,
    total: number,
    ask: (c: Chunk) => Promise<Answer>,
    take: (c: Chunk, a: Answer) => Promise<void>,
  ): Promise<void> {
    const w = new ChunkWindow(
      total,
      this.opts.chunkBytes ?? CHUNK_BYTES,
      this.opts.window ?? WINDOW_CHUNKS,
    );
    const throttle = new ProgressThrottle(total);
    const outstanding: { chunk: Chunk; answer: Promise<Answer> }[] = [];
    this.progress(task, throttle, 0, total);
    try {
      while (!w.finished) {
        for (let c = w.next(); c !== undefined; c = w.next()) {
          const answer = ask(c);
          answer.catch(noop); // awaited in turn below; one failing first must not go unhandled
          outstanding.push({ chunk: c, answer });
        }
        const { chunk, answer } = outstanding.shift()!;
        await take(chunk, await answer);
        w.answer(chunk);
        this.progress(task, throttle, w.done, total);
      }
    } finally {
      outstanding.length = 0;
    }
  }

  private progress(task: string, throttle: ProgressThrottle, done: number, total: number): void {
    if (this.listeners.size === 0 || !throttle.report(done, this.clock.now())) return;
    for (const l of this.listeners) {
      try {
        l(task, done, total);
      } catch (e) {
        this.opts.log.error('transfer progress listener failed', errorMeta(e));
      }
    }
  }

  private request(
    task: string,
    transfer: string,
    body: Body,
    what: string,
    data?: Buffer,
    waitMs: number = this.timeoutMs,
  ): Promise<Answer> {
    if (this.closed) return Promise.reject(failure(`${what}: the file channel was closed`));
    const req = this.nextReq++;
    const { session, pilot } = this.opts;
    const header = { ...body, session, pilot, task, transfer, req };
    const frames = data !== undefined ? [encode(header), data] : [encode(header)];
    return new Promise<Answer>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.pending.delete(req);
        reject(failure(`${what}: no answer from the client within ${Math.round(waitMs)} ms`));
      }, waitMs);
      this.pending.set(req, { resolve, reject, timer });
      this.sendChain = this.sendChain
        .then(() => this.sock.send(frames))
        .catch((e: unknown) =>
          this.settle(req, undefined, failure(`${what}: ${coerceError(e).message}`)),
        );
    });
  }

  private settle(req: number, answer: Answer | undefined, err?: Error): void {
    const p = this.pending.get(req);
    if (p === undefined) return; // timed out, or the channel closed
    this.pending.delete(req);
    p.timer.cancel();
    if (err !== undefined) return p.reject(err);
    const h = answer!.header;
    if (h.ok) return p.resolve(answer!);
    p.reject(new TransferError(h.error?.code ?? 'E_TRANSFER', h.error?.message ?? 'failed'));
  }

  private abort(task: string, transfer: string, what: string): void {
    if (this.closed) return;
    // best effort: the client drops a transfer it hears no more of, after a while
    void this.request(task, transfer, { op: 'abort' }, what).catch(noop);
  }

  /** Answers the client's look into the sandbox; a malformed one is counted and dropped. */
  private serve(value: unknown, data: Buffer | undefined): void {
    let req;
    try {
      if (data !== undefined) throw new Error('a request with a data frame');
      req = parseSandboxRequest(value);
    } catch (e) {
      this.bad.report('invalid sandbox request', { message: coerceError(e).message });
      return;
    }
    if (this.reads === undefined) return this.bad.report('sandbox request: nothing is served', {});
    if (this.serving >= MAX_SERVING) {
      return this.bad.report('sandbox request dropped: too many at once', { req: req.req });
    }
    this.serving++;
    void this.reads.answer(req).then((a) => {
      this.serving--;
      const frames = a.data !== undefined ? [encode(a.header), a.data] : [encode(a.header)];
      this.sendChain = this.sendChain
        .then(() => (this.closed ? undefined : this.sock.send(frames)))
        .catch((e: unknown) => this.opts.log.info('sandbox reply not sent', errorMeta(e)));
    });
  }

  private async receive(): Promise<void> {
    try {
      for await (const [header, data] of this.sock) {
        let reply: FileReply;
        try {
          const value = decode(header ?? Buffer.alloc(0));
          if (isRequest(value)) {
            this.serve(value, data);
            continue;
          }
          reply = parseFileReply(value);
        } catch (e) {
          this.bad.report('invalid file reply', { message: coerceError(e).message });
          continue;
        }
        this.settle(reply.req, { header: reply, data });
      }
    } catch (e) {
      if (!this.sock.closed) this.opts.log.error('file channel stopped', errorMeta(e));
    }
  }
}

/** A message the client starts (a SandboxRequest names an op; a FileReply never does). */
function isRequest(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'op' in value;
}

function failure(message: string): TransferError {
  return new TransferError('E_TRANSFER', message);
}

/** A client path in normal form; a relative one is refused here, before it travels. */
function clientFile(p: string): string {
  const n = normalPath(p);
  const problem = pathProblem(n);
  if (problem !== undefined) throw new TransferError('EINVAL', `client path '${p}' ${problem}`);
  return n;
}

async function writeAll(fh: fsp.FileHandle, data: Buffer, at: number): Promise<void> {
  for (let done = 0; done < data.length;) {
    const { bytesWritten } = await fh.write(data, done, data.length - done, at + done);
    done += bytesWritten;
  }
}
