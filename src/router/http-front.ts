import { timingSafeEqual } from 'node:crypto';
import type * as http from 'node:http';
import type { RouterSnapshot } from './core';
import type { CompiledRouterConfig } from './models';
import { sendError, type RouterProxy } from './proxy';
import { unknownModel } from './refusals';

// The router's HTTP face, OpenAI's conventions: /v1/models, and /v1/chat/completions,
// /v1/completions, /v1/embeddings routed by the body's `model`; any path of one model through
// /v1/router/models/<name>/raw/<path>; the router's state and an unload for its owner. Every
// route but /healthz wants the bearer token.

/** What the front needs of the router. */
export interface FrontRouter {
  config: CompiledRouterConfig;
  proxy: RouterProxy;
  snapshot(): RouterSnapshot;
  unload(model: string): Promise<string[]>;
}

export interface FrontOptions {
  token: string;
  /** The most a request body may hold (default 16 MiB). */
  bodyLimitBytes?: number;
}

/** How long the rest of a body too large is read and dropped before its connection is cut. */
const LINGER_MS = 5_000;

/** The OpenAI routes whose body names the model. */
export const BY_BODY = new Set(['/v1/chat/completions', '/v1/completions', '/v1/embeddings']);
const RAW = /^\/v1\/router\/models\/([^/]+)\/raw(\/.*)?$/;
const UNLOAD = /^\/v1\/router\/models\/([^/]+)\/unload$/;

export function routerHandler(
  router: FrontRouter,
  opts: FrontOptions,
): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  const limit = opts.bodyLimitBytes ?? 16 * 1024 * 1024;
  const want = Buffer.from(`Bearer ${opts.token}`);
  const authorized = (req: http.IncomingMessage): boolean => {
    const got = Buffer.from(req.headers.authorization ?? '');
    return got.length === want.length && timingSafeEqual(got, want);
  };
  return (req, res) => {
    // the path and the query as sent (a URL object per request costs more than the split)
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const path = q < 0 ? target : target.slice(0, q);
    const search = q < 0 ? '' : target.slice(q);
    if (path === '/healthz' && req.method === 'GET') return json(res, 200, { ok: true });
    if (!authorized(req)) {
      res.setHeader('www-authenticate', 'Bearer');
      return sendError(res, {
        status: 401,
        code: 'E_UNAUTHORIZED',
        message: 'a bearer token is required (Authorization: Bearer <token>)',
      });
    }
    if (path === '/v1/models' && req.method === 'GET') return json(res, 200, modelList(router));
    if (path === '/v1/router' && req.method === 'GET') return json(res, 200, router.snapshot());
    const unload = UNLOAD.exec(path);
    if (unload !== null && req.method === 'POST') {
      const name = decodeURIComponent(unload[1]!);
      if (router.config.lookup(name) === undefined) return unknown(res, name, router);
      router.unload(name).then(
        (stopped) => json(res, 200, { model: name, stopped }),
        (e: unknown) =>
          sendError(res, { status: 500, code: 'E_INTERNAL', message: (e as Error).message }),
      );
      return;
    }
    const raw = RAW.exec(path);
    if (raw === null && !(BY_BODY.has(path) && req.method === 'POST')) {
      return sendError(res, {
        status: 404,
        code: 'E_NOT_FOUND',
        message: `no route ${req.method} ${path} (POST /v1/chat/completions, /v1/completions, /v1/embeddings; GET /v1/models; /v1/router/models/<name>/raw/<path>)`,
      });
    }
    const priority = priorityOf(req);
    if (typeof priority === 'string') {
      return sendError(res, { status: 400, code: 'E_VALIDATION', message: priority });
    }
    readBody(req, limit, (body) => {
      if (body === undefined) {
        // the connection closes once the answer is out; what the client still sends is read
        // and dropped meanwhile (a close with unread bytes resets it, and its answer with it)
        res.setHeader('connection', 'close');
        res.once('finish', () => {
          req.resume();
          setTimeout(() => req.destroy(), LINGER_MS).unref();
        });
        return sendError(res, {
          status: 413,
          code: 'E_TOO_LARGE',
          message: `a request body may hold ${limit} bytes at most`,
        });
      }
      if (raw !== null) {
        const name = decodeURIComponent(raw[1]!);
        if (router.config.lookup(name) === undefined) return unknown(res, name, router);
        const rest = `${raw[2] ?? '/'}${search}`;
        return router.proxy.forward(req, res, body, name, rest, priority);
      }
      const model = modelOf(body);
      if (typeof model !== 'string' || model === '') {
        return sendError(res, {
          status: 400,
          code: 'E_VALIDATION',
          message: 'body/model must be the name of a model (a JSON object with a string `model`)',
        });
      }
      router.proxy.forward(req, res, body, model, target, priority);
    });
  };
}

/** `X-Pilotfish-Priority: <integer>`: undefined when absent, a message when malformed. */
export function priorityOf(req: http.IncomingMessage): number | undefined | string {
  const v = req.headers['x-pilotfish-priority'];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n)) {
    return `header X-Pilotfish-Priority must be an integer, not '${String(v)}'`;
  }
  return n;
}

export function modelOf(body: Buffer): unknown {
  try {
    return (JSON.parse(body.toString('utf8')) as { model?: unknown } | null)?.model;
  } catch {
    return undefined;
  }
}

/**
 * Hands `done` the body, or undefined when it is over `limit` (the rest is not read); never
 * when the client goes away while it sends it. A callback, not a promise: this is per request.
 */
function readBody(
  req: http.IncomingMessage,
  limit: number,
  done: (body: Buffer | undefined) => void,
): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) return done(undefined);
  let first: Buffer | undefined;
  let parts: Buffer[] | undefined;
  let size = 0;
  let over = false;
  req.on('data', (d: Buffer) => {
    if (over) return;
    size += d.length;
    if (size > limit) {
      over = true;
      first = parts = undefined;
      req.pause();
      return done(undefined);
    }
    if (first === undefined) first = d;
    else (parts ??= [first]).push(d);
  });
  req.once('end', () => {
    if (!over) done(parts !== undefined ? Buffer.concat(parts, size) : (first ?? Buffer.alloc(0)));
  });
  req.once('error', () => undefined); // the client went away while it sent its body
}

export function modelList(router: Pick<FrontRouter, 'config' | 'snapshot'>): unknown {
  const state = new Map(router.snapshot().models.map((m) => [m.name, m]));
  return {
    object: 'list',
    data: [...router.config.models.values()].map((m) => {
      const s = state.get(m.name)!;
      return {
        id: m.name,
        object: 'model',
        owned_by: 'pilotfish',
        aliases: m.aliases,
        replicas: s.replicas.map((r) => ({ id: r.id, state: r.state, pilot: r.pilot })),
        queued: s.queued,
        inFlight: s.inFlight,
      };
    }),
  };
}

function unknown(res: http.ServerResponse, name: string, router: FrontRouter): void {
  sendError(res, unknownModel(name, router.config));
}

function json(res: http.ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
