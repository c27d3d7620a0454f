import * as http from 'node:http';
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
  'content-length',
]);

interface Held {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  body: Buffer;
  /** The path and query the replica gets. */
  path: string;
  model: string;
  upstream?: http.ClientRequest;
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
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

  constructor(private readonly log: Logger) {}

  bind(core: RouterCore): void {
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
    const url = new URL(h.path, endpoint);
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(h.req.headers)) {
      if (!HOP.has(k) && k !== 'authorization' && v !== undefined) headers[k] = v;
    }
    headers['content-length'] = h.body.length;
    headers['x-forwarded-for'] = h.req.socket.remoteAddress ?? '';
    const up = http.request(url, { method: h.req.method, headers, agent: this.agent });
    h.upstream = up;
    up.on('response', (ans) => {
      if (h.ended) {
        ans.resume();
        return;
      }
      const out: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(ans.headers)) {
        if (!HOP.has(k) && v !== undefined) out[k] = v;
      }
      out['x-pilotfish-replica'] = replica;
      h.eventStream = String(ans.headers['content-type'] ?? '').startsWith('text/event-stream');
      h.res.writeHead(ans.statusCode ?? 502, out);
      h.res.flushHeaders();
      // chunk by chunk as they come, with backpressure; the end ends the answer
      ans.once('end', () => (h.answered = true));
      ans.pipe(h.res);
      ans.once('error', (e) => this.broken(id, h, replica, e));
      ans.once('aborted', () =>
        this.broken(id, h, replica, new Error('the replica closed the answer')),
      );
    });
    up.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'ECONNREFUSED' && !h.ended) {
        // it never reached the replica (nothing listens there now): safe to send elsewhere
        delete h.upstream;
        this.core!.onDispatchFailed(id, `${e.message} (replica ${replica})`);
      } else this.broken(id, h, replica, e);
    });
    up.end(h.body);
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
    this.agent.destroy();
  }

  private broken(id: string, h: Held, replica: string, e: Error): void {
    if (h.ended) return;
    this.log.warn('router: a replica failed a request', { request: id, replica, error: e.message });
    this.fail(h, {
      status: 502,
      code: 'E_BACKEND_ERROR',
      message: `model '${h.model}': its replica ${replica} failed this request: ${e.message}`,
    });
  }

  private fail(h: Held, error: RouteError): void {
    h.upstream?.destroy();
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
    if (h.answered !== true) h.upstream?.destroy();
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
