import * as zmq from 'zeromq';
import type { FileReply, FileRequest } from '../../generated';
import { coerceError, errorMeta, TransferError } from '../../errors';
import { BadMessages } from '../../lib/bad-messages';
import { systemClock, type Clock, type Timer } from '../../lib/clock';
import type { Logger } from '../../lib/logger';
import { parseFileRequest } from '../../lib/validate';
import { decode, encode } from '../../transport/codec';
import { serverOptions, type ServerSecurity } from '../../transport/curve';
import { MAX_CHUNK_BYTES, MAX_FILE_MESSAGE_BYTES } from '../../transport/transfer-flow';
import { FileGrants, type FileGrant } from './grants';
import { Listeners } from '../calls/listeners';
import { SandboxAsks } from './sandbox-asks';
import { ServedFiles, type ServedChunkHook } from './served-files';
import {
  TransferTracker,
  type Direction,
  type TransferListener,
  type TransferProgress,
  type TransferSubject,
} from './transfer-progress';

export interface FileServerOptions {
  /** The session every request must name. */
  session: string;
  log: Logger;
  clock?: Clock;
  /** A transfer no request spoke of for this long is dropped (its agent went away). */
  idleMs?: number;
  /** Transfers one pilot may have open at once (each holds a file handle). */
  maxOpenPerPilot?: number;
  /** The least time between two progress events of one transfer (default 250 ms). */
  progressMs?: number;
  /** Tests only: sees each chunk served after it was hashed (a flipped byte must be caught). */
  servedHook?: ServedChunkHook;
}

/** Requests of one pilot's socket handled at once: what the server holds is bounded by it. */
const IN_FLIGHT_PER_SOCKET = 16;
const DEFAULT_IDLE_MS = 120_000;

type Reply = { header: FileReply; data?: Buffer };

/**
 * The client's end of the file channel (the `transfer` staging action): one ROUTER per pilot,
 * admitted by the pilot's key alone, which its agent's DEALER asks to read and write client
 * files in chunks. It reads only the paths the session allowed that pilot's task to read and
 * writes only the targets it allowed it to write (FileGrants); a request naming another
 * session, pilot or path is refused, counted and logged at a bounded rate. Memory stays bounded:
 * chunks stream from and to open file handles, a socket handles a few requests at a time.
 */
export class FileServer {
  private readonly grants = new FileGrants();
  private readonly served: ServedFiles;
  private readonly sockets: { sock: zmq.Router; loop: Promise<void> }[] = [];
  /** Each transfer's requests run one after another (the checksum is computed in order). */
  private readonly turns = new Map<string, Promise<void>>();
  private readonly bad: BadMessages;
  /** Progress of each transfer, told to `onProgress` listeners. */
  private readonly tracker: TransferTracker;
  private readonly listeners: Listeners<[TransferProgress]>;
  private readonly clock: Clock;
  private readonly idleMs: number;
  private sweep: Timer | undefined;
  private refusedCount = 0;
  private closed = false;
  /** Looks into the pilots' sandboxes, through their agents (output over the session). */
  readonly sandbox: SandboxAsks;

  constructor(private readonly opts: FileServerOptions) {
    this.bad = new BadMessages(opts.log);
    this.clock = opts.clock ?? systemClock;
    this.idleMs = opts.idleMs ?? DEFAULT_IDLE_MS;
    this.served = new ServedFiles(opts.servedHook);
    this.tracker = new TransferTracker(opts.progressMs);
    this.listeners = new Listeners(opts.log);
    this.sandbox = new SandboxAsks(opts.session, opts.log, { clock: this.clock });
  }

  /** Binds `pilot`'s file socket at `address` (its old one on resume); returns where it listens. */
  async listen(
    pilot: string,
    address: string,
    security: ServerSecurity | undefined,
  ): Promise<string> {
    const sock = new zmq.Router({
      linger: 0,
      maxMessageSize: MAX_FILE_MESSAGE_BYTES,
      // a peer that sends more than is handled waits (TCP), it is not held in memory here
      receiveHighWaterMark: IN_FLIGHT_PER_SOCKET,
      // a request to an agent not connected fails at once (SandboxAsks: EHOSTUNREACH), and a
      // send never waits (a reply to a full peer is dropped, as a ROUTER always did); a
      // reconnecting agent (the pilot's uid is its routing id) takes its route over
      mandatory: true,
      sendTimeout: 0,
      handover: true,
      ...serverOptions(security),
    });
    try {
      await sock.bind(address);
    } catch (e) {
      sock.close();
      throw e;
    }
    const send = new RouterSender(sock);
    const route = Buffer.from(pilot);
    this.sandbox.attach(pilot, (frames) => send.send([route, ...frames]));
    this.sockets.push({ sock, loop: this.receive(pilot, sock, send) });
    this.armSweep();
    return sock.lastEndpoint ?? address;
  }

  /**
   * Lets `task` on `pilot` read and write these client paths (absolute; normalized here).
   * `subject`: the task's record, whose transfer directives progress events name.
   */
  allow(pilot: string, task: string, grant: FileGrant, subject?: TransferSubject): void {
    this.grants.allow(pilot, task, grant);
    if (subject !== undefined) this.tracker.expect(pilot, task, subject);
  }

  /** Takes back what `task` on `pilot` was allowed; its open transfers are dropped. */
  forget(pilot: string, task: string): void {
    this.grants.forget(pilot, task);
    this.tracker.forget(pilot, task);
    for (const key of this.served.keys({ pilot, task })) void this.drop(key, 'task forgotten');
  }

  /**
   * Listens for the progress of every transfer of a directive (see TransferProgress): its
   * start, at most one event per `progressMs` while it goes, and its end. Returns how to stop.
   * A listener that throws is logged; transfers go on.
   */
  onProgress(listener: TransferListener): () => void {
    return this.listeners.add(listener);
  }

  /** Requests refused so far (another session or pilot, a path not allowed, malformed). */
  get refused(): number {
    return this.refusedCount;
  }

  /** Closes every socket; open transfers are dropped (temporary files removed). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.sweep?.cancel();
    for (const { sock } of this.sockets) sock.close();
    this.sandbox.close();
    await Promise.all(this.sockets.map((s) => s.loop));
    await Promise.all([...this.turns.values()]);
    await this.served.close();
    for (const key of this.tracker.keys()) this.dropped(key, 'the session closed');
  }

  private async receive(pilot: string, sock: zmq.Router, send: RouterSender): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    try {
      for await (const [route, header, data, ...rest] of sock) {
        if (route === undefined || header === undefined || rest.length > 0) {
          this.refuse('malformed file request', { pilot, frames: rest.length + 3 });
          continue;
        }
        const req = this.parse(pilot, header, data, route, send);
        if (req === undefined) continue;
        const problem = this.check(pilot, req, data);
        if (problem !== undefined) {
          this.refuse('file request refused', { pilot, task: req.task, op: req.op, problem });
          void send.reply(route, { header: failed(req.req, 'EACCES', `refused: ${problem}`) });
          continue;
        }
        const key = `${pilot}\0${req.transfer}`;
        const work = this.inTurn(key, () => this.handle(key, req, data)).then((r) =>
          send.reply(route, r),
        );
        inFlight.add(work);
        void work.then(() => inFlight.delete(work));
        if (inFlight.size >= IN_FLIGHT_PER_SOCKET) await Promise.race(inFlight);
      }
    } catch (e) {
      if (!sock.closed) this.opts.log.error('file server stopped', { pilot, ...errorMeta(e) });
    }
    await Promise.all(inFlight);
    await send.drain();
  }

  private parse(
    pilot: string,
    header: Buffer,
    data: Buffer | undefined,
    route: Buffer,
    send: RouterSender,
  ): FileRequest | undefined {
    let value: unknown;
    try {
      value = decode(header);
      if (isSandboxReply(value)) {
        this.sandbox.settle(pilot, value, data);
        return undefined;
      }
      return parseFileRequest(value);
    } catch (e) {
      const message = coerceError(e).message;
      this.refuse('invalid file request', { pilot, message });
      const req = (value as { req?: unknown } | null | undefined)?.req;
      if (typeof req === 'number' && Number.isSafeInteger(req) && req >= 0) {
        void send.reply(route, {
          header: failed(req, 'E_TRANSFER', `invalid request: ${message}`),
        });
      }
      return undefined;
    }
  }

  /** Why `req` on `pilot`'s socket is refused, or undefined. */
  private check(pilot: string, req: FileRequest, data: Buffer | undefined): string | undefined {
    if (req.session !== this.opts.session) return `names session '${req.session}'`;
    if (req.pilot !== pilot) return `names pilot '${req.pilot}' on the file socket of ${pilot}`;
    if ((req.op === 'write') !== (data !== undefined)) {
      return req.op === 'write' ? 'a write without bytes' : `bytes with '${req.op}'`;
    }
    if (data !== undefined && data.length > MAX_CHUNK_BYTES) {
      return `a chunk of ${data.length} bytes`;
    }
    if (req.op === 'open_read') return this.grants.check(pilot, req.task, 'read', req.path);
    if (req.op === 'open_write') return this.grants.check(pilot, req.task, 'write', req.path);
    const owner = this.served.taskOf(`${pilot}\0${req.transfer}`);
    if (owner !== undefined && owner !== req.task) {
      return `names task ${req.task} for a transfer of task ${owner}`;
    }
    return undefined;
  }

  /** Never throws: every outcome becomes a reply. */
  private async handle(key: string, req: FileRequest, data: Buffer | undefined): Promise<Reply> {
    const now = this.clock.now();
    const at = { pilot: req.pilot, task: req.task, now };
    const ok = (more: Omit<FileReply, 'req' | 'ok'> = {}): Reply => ({
      header: { req: req.req, ok: true, ...more },
    });
    const t = this.tracker;
    try {
      switch (req.op) {
        case 'open_read': {
          this.assertRoom(req.pilot, req.path);
          const opened = await this.served.openRead(key, at, req.path);
          this.tell(t.opened(key, at, 'in', req.path, opened.size));
          return ok(opened);
        }
        case 'read': {
          const chunk = await this.served.read(key, now, req.offset, req.length);
          this.tell(t.advanced(key, req.offset + req.length, now));
          return { ...ok(), data: chunk };
        }
        case 'end_read': {
          const ended = await this.served.endRead(key, now, req);
          this.tell(t.ended(key));
          return ok(ended);
        }
        case 'open_write':
          this.assertRoom(req.pilot, req.path);
          await this.served.openWrite(key, at, req.path, req.size);
          this.tell(t.opened(key, at, 'out', req.path, req.size));
          return ok();
        case 'write':
          await this.served.write(key, now, req.offset, data!);
          this.tell(t.advanced(key, req.offset + data!.length, now));
          return ok();
        case 'commit': {
          const committed = await this.served.commit(key, now, req.bytes, req.sha256);
          this.tell(t.ended(key));
          return ok(committed);
        }
        case 'abort':
          await this.served.drop(key);
          this.dropped(key, 'the agent abandoned the transfer');
          return ok();
      }
    } catch (e) {
      const err = coerceError(e);
      const code = err instanceof TransferError ? err.code : 'E_TRANSFER';
      this.opts.log.info('transfer failed', { pilot: req.pilot, task: req.task, op: req.op, code });
      const error = { code, message: err.message };
      if (req.op === 'open_read' || req.op === 'open_write') {
        // (an open naming a transfer under way fails without ending it)
        const direction: Direction = req.op === 'open_read' ? 'in' : 'out';
        if (this.served.taskOf(key) === undefined) {
          this.tell(t.openFailed(at, direction, req.path, error));
        }
      } else {
        // a failed step ends the transfer: its handle closed, its temporary file removed
        await this.served.drop(key);
        this.tell(t.failed(key, error));
      }
      return { header: failed(req.req, code, err.message) };
    }
  }

  private tell(progress: TransferProgress | undefined): void {
    if (progress !== undefined) this.listeners.fire(progress);
  }

  /** The transfer `key` was ended before its end: its last progress event says why. */
  private dropped(key: string, message: string): void {
    this.tell(this.tracker.failed(key, { code: 'E_TRANSFER', message }));
  }

  private assertRoom(pilot: string, file: string): void {
    const max = this.opts.maxOpenPerPilot ?? 64;
    if (this.served.count(pilot) >= max) {
      throw new TransferError('E_TRANSFER', `cannot open ${file}: ${max} transfers are open`);
    }
  }

  private inTurn<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.turns.get(key) ?? Promise.resolve()).then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.turns.set(key, tail);
    void tail.then(() => {
      if (this.turns.get(key) === tail) this.turns.delete(key);
    });
    return run;
  }

  private drop(key: string, why: string): Promise<void> {
    return this.inTurn(key, async () => {
      if (this.served.taskOf(key) === undefined) return;
      this.opts.log.warn('transfer dropped', { transfer: key.split('\0')[1], why });
      await this.served.drop(key);
      this.dropped(key, `the transfer was dropped (${why})`);
    });
  }

  /** Drops transfers whose agent fell silent, so their handles and files do not leak. */
  private armSweep(): void {
    if (this.sweep !== undefined || this.closed) return;
    this.sweep = this.clock.setTimeout(() => {
      this.sweep = undefined;
      const idleBefore = this.clock.now() - this.idleMs;
      for (const key of this.served.keys({ idleBefore })) void this.drop(key, 'idle');
      this.armSweep();
    }, this.idleMs / 2);
  }

  private refuse(kind: string, meta: Record<string, unknown>): void {
    this.refusedCount++;
    this.bad.report(kind, meta);
  }
}

/** A reply to the client's SandboxRequest (it says `ok`; a FileRequest never does). */
function isSandboxReply(value: unknown): boolean {
  return typeof value === 'object' && value !== null && 'ok' in value;
}

function failed(req: number, code: string, message: string): FileReply {
  return { req, ok: false, error: { code, message } };
}

/** zeromq.js allows one pending send per socket: replies go out one after another. */
class RouterSender {
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly sock: zmq.Router) {}

  reply(route: Buffer, r: Reply): Promise<void> {
    const frames = [route, encode(r.header), ...(r.data !== undefined ? [r.data] : [])];
    // a reply to an agent that went away is lost: the agent's own timeout says so
    this.chain = this.chain
      .then(() => (this.sock.closed ? undefined : this.sock.send(frames)))
      .catch(() => undefined);
    return this.chain;
  }

  /** Sends `frames` (a route first) after what is queued; rejects where the send fails. */
  send(frames: Buffer[]): Promise<void> {
    const sent = this.chain.then(() => this.sock.send(frames));
    this.chain = sent.catch(() => undefined);
    return sent;
  }

  drain(): Promise<void> {
    return this.chain;
  }
}
