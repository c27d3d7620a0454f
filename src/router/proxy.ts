import type * as http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { Pool, type Dispatcher } from 'undici';
import type { Logger } from '../lib/logger';
import type { RouterCore } from './core';
import type { RouteError } from './effects';
import { RequestSlots } from './request-slots';

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

type DispatchController = Dispatcher.DispatchController;

interface Held {
  id: string;
  req: http.IncomingMessage;
  res: http.ServerResponse;
  body: Buffer;
  /** The path and query the replica gets. */
  path: string;
  model: string;
  /** Its request to the replica, once dispatched: how to abort it (the client went away). */
  upstream: DispatchController | undefined;
  /** The replica's answer came whole (its connection may serve the next one). */
  answered?: boolean;
  /** The answer is a stream of server-sent events (an error ends it as an event). */
  eventStream?: boolean;
  ended: boolean;
}

/** Why a request to a replica was aborted: its client went away, or it failed. */
const GONE = new Error('the request ended on the client side');

export class RouterProxy {
  private core: RouterCore | undefined;
  private readonly held = new RequestSlots<Held>();
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
    const h = this.held.add((id) => ({
      id,
      req,
      res,
      body,
      path,
      model,
      upstream: undefined,
      ended: false,
    }));
    // the client went away (or the answer is done): the core hears once
    res.once('close', () => this.end(h.id));
    this.core!.onRequest(h.id, model, priority);
  }

  /**
   * RouterEffects.dispatch: the request goes to its replica now, through undici's lowest
   * layer (dispatch with a handler: no stream, promise or AbortSignal per request, headers as
   * they came), and its answer is written to the client as it comes, with backpressure.
   */
  dispatch(id: string, replica: string, endpoint: string): void {
    const h = this.held.get(id);
    if (h === undefined || h.ended) return;
    const raw = h.req.rawHeaders;
    const headers: string[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const k = raw[i]!.toLowerCase();
      if (!HOP.has(k) && k !== 'authorization' && k !== 'content-length') {
        headers.push(raw[i]!, raw[i + 1]!);
      }
    }
    headers.push('x-forwarded-for', h.req.socket.remoteAddress ?? '');
    const opts = {
      path: h.path,
      method: h.req.method as Dispatcher.HttpMethod,
      headers,
      body: h.body,
    };
    this.poolFor(endpoint).dispatch(opts, {
      onRequestStart: (c) => {
        if (h.ended) c.abort(GONE);
        else h.upstream = c;
      },
      onResponseStart: (_c, status, head) => this.answer(h, replica, status, head),
      onResponseData: (c, chunk) => {
        if (h.ended || h.res.write(chunk)) return;
        c.pause();
        h.res.once('drain', () => c.resume());
      },
      onResponseEnd: () => {
        h.answered = true;
        // nothing to abort now: what undici keeps of the request after its end goes with it
        // (held, the objects of every request outlived young-generation collections)
        h.upstream = undefined;
        if (!h.ended) h.res.end();
      },
      onResponseError: (_c, e: NodeJS.ErrnoException) => {
        if (h.ended || e === GONE) return;
        if (e.code === 'ECONNREFUSED' && !h.res.headersSent) {
          // it never reached the replica (nothing listens there now): safe to send elsewhere
          h.upstream = undefined;
          this.core!.onDispatchFailed(id, `${e.message} (replica ${replica})`);
        } else this.broken(id, h, replica, e);
      },
    });
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

  private answer(h: Held, replica: string, status: number, head: IncomingHttpHeaders): void {
    if (h.ended) return;
    // its content-length kept: the answer goes in one write, not chunked in several
    const out: http.OutgoingHttpHeaders = {};
    for (const k in head) {
      const v = head[k];
      if (!HOP.has(k) && v !== undefined) out[k] = v;
    }
    out['x-pilotfish-replica'] = replica;
    const type = head['content-type'];
    h.eventStream = typeof type === 'string' && type.startsWith('text/event-stream');
    h.res.writeHead(status, out);
    // a stream's head goes at once; any other goes with its first bytes (one write, not two)
    if (h.eventStream) h.res.flushHeaders();
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
    h.upstream?.abort(GONE);
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
    if (h.answered !== true) h.upstream?.abort(GONE);
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
