import type { Logger } from '../lib/logger';
import { HOP, sendError, type ClientSide } from './client-side';
import type { RouterCore } from './core';
import type { RouteError } from './effects';
import { ReplicaPool, type Exchange, type ReplicaAnswer, type ReplicaError } from './replica-pool';
import { RequestSlots } from './request-slots';

// The router's data path: a request held until the core dispatches it, then forwarded to its
// replica as it came (method, path, body) and the answer streamed back as it comes, chunk by
// chunk (server-sent events pass through unbuffered). A client that goes away aborts the
// upstream request. The core hears of every end (onRequestDone), whatever it was.

/** Request headers not passed on: the router sets them, or they are between it and its client. */
const NOT_SENT = new Set([...HOP, 'authorization', 'content-length', 'expect']);

/** A request held or in flight, and where its replica's answer goes (one object, no closures). */
class Held implements ReplicaAnswer {
  /** Its request to the replica, once dispatched: how to abort it (the client went away). */
  upstream: Exchange | undefined = undefined;
  /** The replica it went to. */
  replica = '';
  /** The answer's status and headers, written with its first bytes (one write, not two). */
  status: number | undefined = undefined;
  heading: string[] | undefined = undefined;
  /** The replica's answer came whole (its connection may serve the next one). */
  answered = false;
  /** The answer is a stream of server-sent events (an error ends it as an event). */
  eventStream = false;
  ended = false;

  constructor(
    readonly id: string,
    readonly client: ClientSide,
    readonly request: Buffer,
    /** The path and query the replica gets. */
    readonly path: string,
    readonly model: string,
    private readonly proxy: RouterProxy,
  ) {}

  head(status: number, headers: string[]): void {
    this.proxy.answer(this, status, headers);
  }

  body(chunk: Buffer, last: boolean): void {
    this.proxy.relay(this, chunk, last);
  }

  onError(e: ReplicaError): void {
    this.proxy.upstreamFailed(this, e);
  }
}

export class RouterProxy {
  private core: RouterCore | undefined;
  private readonly held = new RequestSlots<Held>();
  /** Keep-alive connections to each replica, by endpoint. */
  private readonly pools = new Map<string, ReplicaPool>();

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
    client: ClientSide,
    body: Buffer,
    model: string,
    path: string,
    priority: number | undefined,
  ): void {
    const h = this.held.add((id) => new Held(id, client, body, path, model, this));
    // the client went away (or the answer is done): the core hears once
    client.onceClose(() => this.end(h.id));
    this.core!.onRequest(h.id, model, priority);
  }

  /**
   * RouterEffects.dispatch: the request goes to its replica now, as it came (its body whole),
   * and its answer is written to the client as it comes, with backpressure.
   */
  dispatch(id: string, replica: string, endpoint: string): void {
    const h = this.held.get(id);
    if (h === undefined || h.ended) return;
    const raw = h.client.headers;
    let headers = '';
    for (let i = 0; i + 1 < raw.length; i += 2) {
      if (!NOT_SENT.has(raw[i]!.toLowerCase())) headers += `${raw[i]}: ${raw[i + 1]}\r\n`;
    }
    headers += `x-forwarded-for: ${h.client.remoteAddress}\r\n`;
    h.replica = replica;
    h.upstream = this.poolFor(endpoint).send(h.client.method, h.path, headers, h.request, h);
  }

  /** A replica's endpoint is gone: its connections are closed. */
  forget(endpoint: string): void {
    this.pools.get(endpoint)?.destroy();
    this.pools.delete(endpoint);
  }

  private poolFor(endpoint: string): ReplicaPool {
    let pool = this.pools.get(endpoint);
    if (pool === undefined) {
      pool = new ReplicaPool(endpoint);
      this.pools.set(endpoint, pool);
    }
    return pool;
  }

  /** Held.head: the replica's answer's head; an event stream's goes at once. */
  answer(h: Held, status: number, head: string[]): void {
    if (h.ended) return;
    // as they came (the client side drops those of one hop), its content-length kept: the
    // answer goes in one write, not chunked in several
    let type = '';
    for (let i = 0; i < head.length; i += 2) if (head[i] === 'content-type') type = head[i + 1]!;
    const out = head;
    out.push('x-pilotfish-replica', h.replica);
    h.eventStream = type.startsWith('text/event-stream');
    if (h.eventStream) {
      // a stream's head goes at once, before its first event
      h.client.writeHead(status, out, true);
      h.client.flushHeaders();
    } else {
      h.status = status;
      h.heading = out;
    }
  }

  /** Held.body: bytes of the answer, to the client as they come. */
  relay(h: Held, chunk: Buffer, last: boolean): void {
    if (h.ended) return;
    const res = h.client;
    if (h.status !== undefined) {
      res.writeHead(h.status, h.heading!, true);
      h.status = h.heading = undefined;
    }
    if (last) {
      h.answered = true;
      // nothing to abort now: what is left of the request to the replica goes with it
      h.upstream = undefined;
      if (chunk.length > 0) res.end(chunk);
      else res.end();
      return;
    }
    if (res.write(chunk)) return;
    const x = h.upstream!;
    x.pause();
    res.onceDrain(() => x.resume());
  }

  /** Held.onError: the request to the replica failed. */
  upstreamFailed(h: Held, e: ReplicaError): void {
    h.upstream = undefined;
    if (h.ended) return;
    if (!e.reached && !h.client.headersSent) {
      // it never reached the replica (nothing listens there now): safe to send elsewhere
      this.core!.onDispatchFailed(h.id, `${e.message} (replica ${h.replica})`);
    } else this.broken(h.id, h, h.replica, e);
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
    h.upstream?.abort();
    h.upstream = undefined;
    const res = h.client;
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
    if (h.answered !== true) h.upstream?.abort();
    this.core!.onRequestDone(id);
  }
}
