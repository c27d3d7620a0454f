import { STATUS_CODES } from 'node:http';
import * as net from 'node:net';
import { HOP, type ClientSide } from './client-side';
import { FramingError, TOKEN } from './http1-body';
import { RequestReader, type RequestHead } from './request-reader';

// The router's own HTTP/1.1 server (startRouter): requests read whole (the body names the
// model) by a strict reader, one at a time per connection (a pipelined one waits its turn),
// answers written with their head in the same write as their first bytes. Not node:http:
// its request and response objects and streams were a third of the router's CPU per request,
// and the router needs none of them. Slow clients are cut as node:http cuts them: a head
// within 60 s, a whole request within 300 s, an idle keep-alive connection after 5 s.

/** A request read whole. */
export type FrontRequest = RequestHead;

export interface FrontServerOptions {
  /** The most a request body may hold; more is answered 413 (default 16 MiB). */
  bodyLimitBytes?: number;
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  keepAliveMs?: number;
}

/** How long the rest of a refused request is read and dropped before its connection is cut. */
const LINGER_MS = 5_000;
/** Bytes of later requests held while one is answered; more, and reading waits. */
const STASH_MAX = 1024 * 1024;
const CONTINUE = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n');
const CRLF = Buffer.from('\r\n');
const LAST_CHUNK = Buffer.from('0\r\n\r\n');
/** What a header value written may not hold: anything but visible latin1 and tabs (CR, LF...). */
const UNWRITABLE = /[^\t\x20-\x7e\x80-\xff]/;

export interface FrontServer {
  readonly server: net.Server;
  /** Stops listening and cuts every connection. */
  close(): Promise<void>;
}

export function createFrontServer(
  handle: (req: FrontRequest, reply: FrontReply) => void,
  opts: FrontServerOptions = {},
): FrontServer {
  const o = {
    bodyLimitBytes: opts.bodyLimitBytes ?? 16 * 1024 * 1024,
    headersTimeoutMs: opts.headersTimeoutMs ?? 60_000,
    requestTimeoutMs: opts.requestTimeoutMs ?? 300_000,
    keepAliveMs: opts.keepAliveMs ?? 5_000,
  };
  const open = new Set<FrontConnection>();
  // a client that ends its side is gone (as node:http takes it): what it asked is cancelled
  const server = net.createServer({ noDelay: true }, (socket) => {
    const c = new FrontConnection(socket, handle, o);
    open.add(c);
    socket.once('close', () => open.delete(c));
  });
  // one timer for every connection: the deadlines of slow heads, requests and idle ones
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const c of open) c.check(now);
  }, 1_000).unref();
  server.once('close', () => clearInterval(sweep));
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const c of open) c.socket.destroy();
      }),
  };
}

type Options = Required<FrontServerOptions>;

class FrontConnection {
  private readonly reader: RequestReader;
  private head: RequestHead | undefined;
  private parts: Buffer[] = [];
  private size = 0;
  private tooLarge = false;
  private complete = false;
  /** A request is being answered; what comes meanwhile waits in `stash`. */
  private reply: FrontReply | undefined;
  private stash: Buffer | undefined;
  /** Refused or closing: what still comes is dropped. */
  private closing = false;
  private deadline: number;
  private timeoutStatus = 0;

  constructor(
    readonly socket: net.Socket,
    private readonly handle: (req: FrontRequest, reply: FrontReply) => void,
    private readonly o: Options,
  ) {
    this.reader = new RequestReader({
      head: (h) => this.onHead(h),
      body: (chunk, last) => this.onBody(chunk, last),
    });
    this.deadline = Date.now() + o.keepAliveMs;
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('error', () => undefined); // a client gone: 'close' follows
    socket.once('close', () => this.reply?.gone());
  }

  /** The sweep: a deadline passed (0: none runs while a request is answered). */
  check(now: number): void {
    if (this.deadline === 0 || now < this.deadline || this.closing) return;
    if (this.timeoutStatus === 0) this.socket.destroy();
    else this.refuse(this.timeoutStatus, 'E_TIMEOUT', 'the request did not come whole in time');
  }

  private onData(d: Buffer): void {
    if (this.closing) return;
    if (this.reply !== undefined) {
      this.stash = this.stash === undefined ? d : Buffer.concat([this.stash, d]);
      if (this.stash.length > STASH_MAX) this.socket.pause();
      return;
    }
    this.read(d);
  }

  private read(buf: Buffer): void {
    let i = 0;
    while (i < buf.length && this.reply === undefined && !this.closing) {
      if (this.reader.between) this.arm(this.o.headersTimeoutMs, 408);
      try {
        i = this.reader.feed(buf, i);
      } catch (e) {
        if (!(e instanceof FramingError)) throw e;
        return this.refuse(e.status, 'E_BAD_REQUEST', e.message);
      }
      if (this.tooLarge) {
        const limit = this.o.bodyLimitBytes;
        return this.refuse(413, 'E_TOO_LARGE', `a request body may hold ${limit} bytes at most`);
      }
      if (this.complete) this.dispatch();
    }
    if (i < buf.length && !this.closing) this.stash = buf.subarray(i);
  }

  private arm(ms: number, status: number): void {
    this.deadline = Date.now() + ms;
    this.timeoutStatus = status;
  }

  private onHead(h: RequestHead): void {
    this.head = h;
    this.tooLarge = false;
    this.parts = [];
    this.size = 0;
    this.complete = false;
    this.arm(this.o.requestTimeoutMs, 408);
    if (h.length !== undefined && h.length > this.o.bodyLimitBytes) this.tooLarge = true;
    else if (h.expectContinue) this.socket.write(CONTINUE);
  }

  private onBody(chunk: Buffer, last: boolean): void {
    if (this.tooLarge) return;
    this.size += chunk.length;
    if (this.size > this.o.bodyLimitBytes) {
      this.tooLarge = true;
      this.parts = [];
      return;
    }
    if (chunk.length > 0) this.parts.push(chunk);
    if (last) this.complete = true;
  }

  private dispatch(): void {
    this.complete = false;
    const h = this.head!;
    const body = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
    this.parts = [];
    this.deadline = 0; // answering: a model may take its time
    const req: FrontRequest = h;
    req.body = body;
    req.remoteAddress = this.socket.remoteAddress ?? '';
    this.reply = new FrontReply(this, req);
    this.handle(req, this.reply);
  }

  /** The answer to the request under way was written whole. */
  answered(reply: FrontReply, reusable: boolean): void {
    if (this.reply !== reply) return;
    this.reply = undefined;
    const keepAlive = this.head!.keepAlive;
    this.head = undefined; // its body with it
    if (!reusable || !keepAlive) return this.close();
    this.arm(this.o.keepAliveMs, 0);
    const rest = this.stash;
    this.stash = undefined;
    if (this.socket.isPaused()) this.socket.resume();
    if (rest !== undefined) this.read(rest);
  }

  /** Answers `status` and closes: what the client still sends is read and dropped a while. */
  refuse(status: number, code: string, message: string): void {
    if (this.closing) return;
    if (this.reply === undefined) {
      const body = JSON.stringify({ error: { code, message } });
      const reply = new FrontReply(this, undefined);
      reply.writeHead(status, [
        'content-type',
        'application/json',
        'content-length',
        String(body.length),
      ]);
      reply.end(body);
    }
    this.close();
  }

  private close(): void {
    this.closing = true;
    this.stash = undefined;
    this.deadline = 0;
    // a close with bytes unread resets the connection, and the answer with it: read a while
    this.socket.end();
    if (this.socket.isPaused()) this.socket.resume();
    setTimeout(() => this.socket.destroy(), LINGER_MS).unref();
  }
}

/** The answer to one request: a head, then bytes (by length, or chunked), then its end. */
export class FrontReply implements ClientSide {
  readonly method: string;
  readonly headers: readonly string[];
  readonly remoteAddress: string;
  headersSent = false;
  /** The head, not written yet: it goes with the first bytes. */
  private pendingHead: string | undefined;
  private chunked = false;
  private bodyless = false;
  private keepAlive = true;
  private readonly http10: boolean;
  /** Bytes the head's Content-Length promises, and bytes written. */
  private declared = -1;
  private written = 0;
  private ended = false;
  private closeFns: (() => void)[] | undefined;
  private closed = false;

  constructor(
    private readonly conn: FrontConnection,
    req: FrontRequest | undefined,
  ) {
    this.method = req?.method ?? 'GET';
    this.headers = req?.headers ?? [];
    this.remoteAddress = req?.remoteAddress ?? '';
    this.keepAlive = req?.keepAlive ?? false;
    this.http10 = req?.http10 ?? false;
  }

  /**
   * Headers as name, value pairs; those of one hop (Connection, Keep-Alive, Transfer-Encoding...)
   * are its own. `checked`: names are lowercase tokens, values free of control bytes.
   */
  writeHead(status: number, headers: string[], checked = false): void {
    if (this.headersSent) throw new Error('the answer has its head already');
    let s = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
    let date = false;
    let declared = -1;
    for (let i = 0; i + 1 < headers.length; i += 2) {
      const k = checked ? headers[i]! : headers[i]!.toLowerCase();
      const v = headers[i + 1]!;
      if (HOP.has(k)) continue;
      if (!checked && (!TOKEN.test(k) || UNWRITABLE.test(v))) {
        throw new Error(`header '${k}' may not be written`);
      }
      if (k === 'content-length') {
        if (declared >= 0) continue; // said twice (alike: the reader saw to it), written once
        if (!/^\d{1,15}$/.test(v)) throw new Error(`content-length '${v}' is not a length`);
        declared = Number(v);
      } else if (k === 'date') date = true;
      s += `${headers[i]}: ${v}\r\n`;
    }
    if (!date) s += `date: ${httpDate()}\r\n`;
    this.declared = declared;
    this.bodyless = this.method === 'HEAD' || status === 204 || status === 304;
    if (declared < 0 && !this.bodyless) {
      // an HTTP/1.0 client knows no chunks: the answer ends with the connection
      if (this.http10) this.keepAlive = false;
      else {
        this.chunked = true;
        s += 'transfer-encoding: chunked\r\n';
      }
    }
    s += this.keepAlive ? 'connection: keep-alive\r\n\r\n' : 'connection: close\r\n\r\n';
    this.pendingHead = s;
    this.headersSent = true;
  }

  flushHeaders(): void {
    if (this.pendingHead === undefined) return;
    this.conn.socket.write(this.pendingHead, 'latin1');
    this.pendingHead = undefined;
  }

  write(chunk: Buffer): boolean {
    if (this.ended || this.closed) return true;
    if (!this.headersSent) this.writeHead(200, []);
    return this.send(chunk, false);
  }

  end(chunk?: Buffer | string): void {
    if (this.ended || this.closed) return;
    this.ended = true;
    if (!this.headersSent) {
      const n = chunk === undefined ? 0 : Buffer.byteLength(chunk);
      this.writeHead(200, ['content-length', String(n)]);
    }
    const data =
      chunk === undefined ? undefined : typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    this.send(data, true);
    // an answer shorter than its length leaves the client waiting: the connection goes
    const whole = this.bodyless || this.declared < 0 || this.written === this.declared;
    this.conn.answered(this, whole && this.keepAlive);
    if (!whole) this.conn.socket.destroy();
    process.nextTick(goneLater, this);
  }

  onceDrain(fn: () => void): void {
    this.conn.socket.once('drain', fn);
  }

  onceClose(fn: () => void): void {
    if (this.closed) return void process.nextTick(fn);
    (this.closeFns ??= []).push(fn);
  }

  destroy(): void {
    this.conn.socket.destroy();
  }

  /** The answer is done, or its client went away: once. */
  gone(): void {
    if (this.closed) return;
    this.closed = true;
    const fns = this.closeFns;
    this.closeFns = undefined;
    if (fns !== undefined) for (const fn of fns) fn();
  }

  /** The head (if not yet written), the bytes framed, and the end: in one write. */
  private send(data: Buffer | undefined, last: boolean): boolean {
    const head = this.pendingHead;
    this.pendingHead = undefined;
    const body = data !== undefined && data.length > 0 && !this.bodyless ? data : undefined;
    if (body !== undefined) this.written += body.length;
    const size = body !== undefined && this.chunked ? `${body.length.toString(16)}\r\n` : '';
    const tail = last && this.chunked ? LAST_CHUNK.length : 0;
    const n =
      (head?.length ?? 0) + size.length + (body?.length ?? 0) + (size === '' ? 0 : 2) + tail;
    if (n === 0) return true;
    if (head === undefined && size === '' && tail === 0) return this.conn.socket.write(body!);
    // a head's bytes are latin1, one a character (writeHead let no other through)
    const out = Buffer.allocUnsafe(n);
    let at = head === undefined ? 0 : out.write(head, 0, 'latin1');
    if (size !== '') at += out.write(size, at, 'latin1');
    if (body !== undefined) at += body.copy(out, at);
    if (size !== '') at += CRLF.copy(out, at);
    if (tail > 0) LAST_CHUNK.copy(out, at);
    return this.conn.socket.write(out);
  }
}

function goneLater(reply: FrontReply): void {
  reply.gone();
}

let dateSecond = 0;
let dateText = '';
/** The Date header's value, made once a second. */
function httpDate(): string {
  const now = Date.now();
  const s = Math.floor(now / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}
