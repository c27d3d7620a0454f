import type * as http from 'node:http';
import { Pool, type Dispatcher } from 'undici';
import type { Logger } from '../lib/logger';
import type { RouterCore } from './core';
import type { RouteError } from './effects';

// The router's data path: a request held until the core dispatches it, then forwarded to its
// replica as it came (method, path, body) and the answer streamed back as it comes, chunk by
// chunk (server-sent events pass through unbuffered). A client that goes away aborts the
// upstream request. The core hears of every end (onRequestDone), whatever it was.

/** Headers that belong to one hop of a connection, never forwarded (RFC 9110 7.6.1). */
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

interface Held {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  body: Buffer;
  /** The path and query the replica gets. */
  path: string;
  model: string;
  /** Aborts its request to the replica (the client went away, or it failed). */
  abort?: AbortController;
  /** The replica's answer came whole (its connection may serve the next one). */
  answered?: boolean;
  /** The answer is a stream of server-sent events (an error ends it as an event). */
  eventStream?: boolean;
  ended: boolean;
}

export class RouterProxy {
  private core: RouterCore | undefined;
  private readonly held = new Map<string, Held>();
  private seq = 0;
  /** Keep-alive connections to each replica, by endpoint. */
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly log: Logger) {}

  attach(core: RouterCore): void {
    this.core = core;
  }

  /** Requests held or in flight. */
  get size(): number {
    return this.held.size;
  }

  /**
   * Takes a request for `model` (its body read already): held until the core sends it to a
   * replica, where it goes to `path`.
   */
  forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    body: Buffer,
    model: string,
    path: string,
    priority: number | undefined,
  ): void {
    const id = `q${this.seq++}`;
    const h: Held = { req, res, body, path, model, ended: false };
    this.held.set(id, h);
    // the client went away (or the answer is done): the core hears once
    res.once('close', () => this.end(id));
    this.core!.onRequest(id, model, priority);
  }

  /** RouterEffects.dispatch: the request goes to its replica now. */
  dispatch(id: string, replica: string, endpoint: string): void {
    const h = this.held.get(id);
    if (h === undefined || h.ended) return;
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(h.req.headers)) {
      if (!HOP.has(k) && k !== 'authorization' && k !== 'content-length' && v !== undefined) {
        headers[k] = v;
      }
    }
    headers['x-forwarded-for'] = h.req.socket.remoteAddress ?? '';
    const abort = new AbortController();
    h.abort = abort;
    this.poolFor(endpoint)
      .request({
        path: h.path,
        method: h.req.method as Dispatcher.HttpMethod,
        headers,
        body: h.body,
        signal: abort.signal,
      })
      .then(
        (ans) => this.answer(id, h, replica, ans),
        (e: NodeJS.ErrnoException) => {
          if (h.ended) return;
          if (e.code === 'ECONNREFUSED') {
            // it never reached the replica (nothing listens there now): safe to send elsewhere
            delete h.abort;
            this.core!.onDispatchFailed(id, `${e.message} (replica ${replica})`);
          } else this.broken(id, h, replica, e);
        },
      );
  }

  /** A replica's endpoint is gone: its connections are closed. */
  forget(endpoint: string): void {
    const pool = this.pools.get(endpoint);
    this.pools.delete(endpoint);
    void pool?.destroy().catch(() => undefined);
  }

  private poolFor(endpoint: string): Pool {
    let pool = this.pools.get(endpoint);
    if (pool === undefined) {
      // keep-alive connections, one request at a time on each (no pipelining: a slow answer
      // must not hold up the next one)
      pool = new Pool(endpoint, { connections: 512, pipelining: 1, keepAliveTimeout: 10_000 });
      this.pools.set(endpoint, pool);
    }
    return pool;
  }

  private answer(id: string, h: Held, replica: string, ans: Dispatcher.ResponseData): void {
    if (h.ended) {
      ans.body.resume();
      return;
    }
    // its content-length kept: the answer goes in one write, not chunked in several
    const out: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(ans.headers)) {
      if (!HOP.has(k) && v !== undefined) out[k] = v;
    }
    out['x-pilotfish-replica'] = replica;
    h.eventStream = String(ans.headers['content-type'] ?? '').startsWith('text/event-stream');
    h.res.writeHead(ans.statusCode, out);
    // a stream's head goes at once; any other goes with its first bytes (one write, not two)
    if (h.eventStream) h.res.flushHeaders();
    // chunk by chunk as they come, with backpressure; the end ends the answer
    ans.body.once('end', () => (h.answered = true));
    ans.body.once('error', (e) => this.broken(id, h, replica, e));
    ans.body.pipe(h.res);
  }

  /** RouterEffects.reject: the request's answer is this error (or its stream ends with it). */
  reject(id: string, error: RouteError): void {
    const h = this.held.get(id);
    if (h === undefined || h.ended) return;
    this.fail(h, error);
  }

  /** Ends every request held (the router closes): 503 to those not answered yet. */
  close(): void {
    for (const h of this.held.values()) {
      this.fail(h, { status: 503, code: 'E_CLOSING', message: 'the router is closing' });
    }
    for (const endpoint of [...this.pools.keys()]) this.forget(endpoint);
  }

  /**
   * The connection to the replica failed under a request (reset, closed mid-answer): the
   * request fails (it may have been served: it is not sent again), and the replica, likely
   * dead before its task's end is heard, takes no more requests.
   */
  private broken(id: string, h: Held, replica: string, e: Error): void {
    if (h.ended) return;
    this.log.warn('router: a replica failed a request', { request: id, replica, error: e.message });
    this.fail(h, {
      status: 502,
      code: 'E_BACKEND_ERROR',
      message: `model '${h.model}': its replica ${replica} failed this request: ${e.message}`,
    });
    this.core!.onReplicaBroken(replica);
  }

  private fail(h: Held, error: RouteError): void {
    h.abort?.abort();
    const res = h.res;
    if (!res.headersSent) {
      sendError(res, error);
    } else if (h.eventStream === true) {
      // an event stream under way ends with the error as its last event (as OpenAI's do)
      res.end(
        `data: ${JSON.stringify({ error: { code: error.code, message: error.message } })}\n\n`,
      );
    } else res.destroy();
  }

  private end(id: string): void {
    const h = this.held.get(id);
    if (h === undefined) return;
    this.held.delete(id);
    h.ended = true;
    if (h.answered !== true) h.abort?.abort();
    this.core!.onRequestDone(id);
  }
}

/** The API's error shape, `{error: {code, message}}`, with its status. */
export function sendError(res: http.ServerResponse, error: RouteError): void {
  const body = JSON.stringify({ error: { code: error.code, message: error.message } });
  res.writeHead(error.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
