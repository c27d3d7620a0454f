import * as net from 'node:net';
import { AnswerReader, FramingError, type AnswerSink } from './answer-reader';

// Keep-alive HTTP/1.1 connections to one replica, one request at a time on each (a slow answer
// never holds up another). Not undici: its per-request machinery (request objects, handler
// wrappers, timers, headers parsed to objects) was a fifth of the router's CPU per request,
// and the router needs only this: send a request it has whole, stream the answer back.
// Connections are opened as requests need them; the core bounds how many a replica is given.

/**
 * How an answer reaches the proxy: its head, its body (the call with `last` ends it), or an
 * error instead; nothing after the end, an error or an abort.
 */
export interface ReplicaAnswer extends AnswerSink {
  onError(e: ReplicaError): void;
}

/** A request to a replica failed; `reached`: it may have reached the replica (not to resend). */
export class ReplicaError extends Error {
  constructor(
    message: string,
    readonly reached: boolean,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** A request under way: abort it (its connection closes), or hold its answer's bytes. */
export interface Exchange {
  abort(): void;
  pause(): void;
  resume(): void;
}

export interface ReplicaPoolOptions {
  /** How long a connection may take to open (default 10 s). */
  connectTimeoutMs?: number;
  /** How long an idle connection is kept, at most (default 10 s; less if the replica says). */
  idleMs?: number;
}

/** Under what the replica says it keeps (its Keep-Alive: timeout), so it never closes first. */
const IDLE_MARGIN_MS = 1_000;
/** How long an idle connection is kept when the replica does not say. */
const IDLE_UNSAID_MS = 4_000;

export class ReplicaPool {
  private readonly host: string;
  private readonly port: number;
  private readonly hostHeader: string;
  private readonly idle: Connection[] = [];
  private readonly open = new Set<Connection>();
  private readonly connectTimeoutMs: number;
  private readonly idleMs: number;
  private sweeper: NodeJS.Timeout | undefined;
  private destroyed = false;

  constructor(endpoint: string, opts: ReplicaPoolOptions = {}) {
    const url = new URL(endpoint);
    if (url.protocol !== 'http:') {
      throw new Error(`a replica's endpoint is http://, not ${endpoint}`);
    }
    this.host = url.hostname.replace(/^\[|\]$/g, '');
    this.port = Number(url.port || 80);
    this.hostHeader = url.host;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
    this.idleMs = opts.idleMs ?? 10_000;
  }

  /** Connections open (idle or busy). */
  get size(): number {
    return this.open.size;
  }

  /**
   * Sends `method path` with `headers` (lines ending in CRLF, names and values as the client's
   * were: validated already) and `body`; the answer goes to `answer`.
   */
  send(
    method: string,
    path: string,
    headers: string,
    body: Buffer,
    answer: ReplicaAnswer,
  ): Exchange {
    if (this.destroyed) {
      const x = new InFlightRequest(undefined, answer);
      queueMicrotask(() => answer.onError(new ReplicaError('the replica is gone', false)));
      return x;
    }
    const head = `${method} ${path} HTTP/1.1\r\nhost: ${this.hostHeader}\r\n${headers}content-length: ${body.length}\r\n\r\n`;
    const conn = this.take() ?? this.connect();
    const x = new InFlightRequest(conn, answer);
    conn.start(x, method === 'HEAD', head, body);
    return x;
  }

  /** Closes every connection; requests under way fail (their replica is gone). */
  destroy(): void {
    this.destroyed = true;
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    for (const c of [...this.open]) c.fail(new ReplicaError('the replica is gone', true));
    this.idle.length = 0;
  }

  /** The idle connection used last (its socket's buffers warm), if one is fresh enough. */
  private take(): Connection | undefined {
    const now = Date.now();
    for (let c = this.idle.pop(); c !== undefined; c = this.idle.pop()) {
      if (now - c.idleSince < c.idleLimit && c.usable) return c;
      c.close();
    }
    return undefined;
  }

  private connect(): Connection {
    const socket = net.connect({ host: this.host, port: this.port, noDelay: true });
    const conn = new Connection(socket, this);
    this.open.add(conn);
    const timer = setTimeout(() => {
      conn.fail(
        new ReplicaError(`no connection within ${this.connectTimeoutMs} ms`, false, 'ETIMEDOUT'),
      );
    }, this.connectTimeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      conn.connected = true;
    });
    socket.once('close', () => clearTimeout(timer));
    return conn;
  }

  /** A connection's answer is done and it may serve another. */
  release(c: Connection, hintS: number | undefined): void {
    if (this.destroyed) return c.close();
    c.idleSince = Date.now();
    c.idleLimit =
      hintS === undefined
        ? Math.min(this.idleMs, IDLE_UNSAID_MS)
        : Math.min(this.idleMs, hintS * 1_000 - IDLE_MARGIN_MS);
    if (c.idleLimit <= 0) return c.close();
    this.idle.push(c);
    // one timer for the pool closes connections left idle too long (none per request)
    this.sweeper ??= setInterval(() => this.sweep(), 1_000).unref();
  }

  dropped(c: Connection): void {
    this.open.delete(c);
    const k = this.idle.indexOf(c);
    if (k >= 0) this.idle.splice(k, 1);
  }

  private sweep(): void {
    const now = Date.now();
    for (const c of [...this.idle]) if (now - c.idleSince >= c.idleLimit) c.close();
    if (this.idle.length === 0 && this.sweeper !== undefined) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}

/** One request's hold on its connection. */
class InFlightRequest implements Exchange {
  constructor(
    public conn: Connection | undefined,
    readonly answer: ReplicaAnswer,
  ) {}

  abort(): void {
    const conn = this.conn;
    if (conn?.current !== this) return;
    this.conn = undefined;
    conn.current = undefined;
    conn.close();
  }

  pause(): void {
    if (this.conn?.current === this) this.conn.socket.pause();
  }

  resume(): void {
    if (this.conn?.current === this) this.conn.socket.resume();
  }
}

class Connection implements AnswerSink {
  private readonly reader = new AnswerReader();
  current: InFlightRequest | undefined;
  connected = false;
  /** When it was last released, and for how long it may stay idle. */
  idleSince = 0;
  idleLimit = 0;
  /** Whether the request under way has had bytes of its answer. */
  private answered = false;

  constructor(
    readonly socket: net.Socket,
    private readonly pool: ReplicaPool,
  ) {
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('end', () => this.onEnd());
    socket.on('error', (e: NodeJS.ErrnoException) => {
      // before the connection opened, nothing of the request can have reached the replica
      this.fail(new ReplicaError(e.message, this.connected, e.code));
    });
    socket.on('close', () => {
      this.pool.dropped(this);
      this.fail(new ReplicaError('the connection to the replica closed', this.connected));
    });
  }

  get usable(): boolean {
    return !this.socket.destroyed && this.socket.writable && this.socket.readable;
  }

  start(x: InFlightRequest, headRequest: boolean, head: string, body: Buffer): void {
    this.current = x;
    this.answered = false;
    this.reader.expect(this, headRequest);
    const s = this.socket;
    if (body.length <= 16 * 1024) {
      // one buffer, one write
      const n = Buffer.byteLength(head, 'latin1');
      const out = Buffer.allocUnsafe(n + body.length);
      out.write(head, 0, 'latin1');
      body.copy(out, n);
      s.write(out);
    } else {
      s.cork();
      s.write(head, 'latin1');
      s.write(body);
      s.uncork();
    }
  }

  head(status: number, headers: string[]): void {
    this.answered = true;
    this.current?.answer.head(status, headers);
  }

  body(chunk: Buffer, last: boolean): void {
    this.current?.answer.body(chunk, last);
  }

  private onData(d: Buffer): void {
    const x = this.current;
    let done: boolean;
    try {
      done = this.reader.feed(d);
    } catch (e) {
      return this.fail(this.framing(e));
    }
    if (done && x !== undefined && this.current === x) this.finish(x);
  }

  private onEnd(): void {
    const x = this.current;
    let done: boolean;
    try {
      done = this.reader.end();
    } catch (e) {
      return this.fail(this.framing(e));
    }
    if (done && x !== undefined && this.current === x) this.finish(x);
    this.close();
  }

  private finish(x: InFlightRequest): void {
    this.current = undefined;
    x.conn = undefined;
    if (this.reader.keepAlive && this.usable) {
      this.socket.resume();
      this.pool.release(this, this.reader.idleHintS);
    } else this.close();
  }

  private framing(e: unknown): ReplicaError {
    if (e instanceof FramingError) return new ReplicaError(e.message, true, 'E_FRAMING');
    throw e;
  }

  /** The request under way (if any) fails with `e`, and the connection closes. */
  fail(e: ReplicaError): void {
    const x = this.current;
    this.current = undefined;
    this.close();
    if (x === undefined) return;
    x.conn = undefined;
    // bytes of an answer came: it reached the replica, whatever the socket says
    x.answer.onError(this.answered && !e.reached ? new ReplicaError(e.message, true, e.code) : e);
  }

  close(): void {
    this.pool.dropped(this);
    if (!this.socket.destroyed) this.socket.destroy();
  }
}
