import { timingSafeEqual } from 'node:crypto';
import { sendError, sendJson, type ClientSide } from './client-side';
import type { RouterSnapshot } from './core';
import type { FrontReply, FrontRequest } from './front-server';
import type { CompiledRouterConfig } from './models';
import { headerOf } from './request-reader';
import type { RouterProxy } from './proxy';
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
}

/** The OpenAI routes whose body names the model. */
export const BY_BODY = new Set(['/v1/chat/completions', '/v1/completions', '/v1/embeddings']);
const RAW = /^\/v1\/router\/models\/([^/]+)\/raw(\/.*)?$/;
const UNLOAD = /^\/v1\/router\/models\/([^/]+)\/unload$/;

export function routerHandler(
  router: FrontRouter,
  opts: FrontOptions,
): (req: FrontRequest, reply: FrontReply) => void {
  const want = Buffer.from(`Bearer ${opts.token}`);
  const authorized = (req: FrontRequest): boolean => {
    const got = Buffer.from(headerOf(req.headers, 'authorization') ?? '');
    return got.length === want.length && timingSafeEqual(got, want);
  };
  return (req, reply) => {
    // the path and the query as sent
    const target = req.target;
    const q = target.indexOf('?');
    const path = q < 0 ? target : target.slice(0, q);
    const search = q < 0 ? '' : target.slice(q);
    if (path === '/healthz' && req.method === 'GET') return sendJson(reply, 200, { ok: true });
    if (!authorized(req)) {
      const message = 'a bearer token is required (Authorization: Bearer <token>)';
      return sendJson(reply, 401, { error: { code: 'E_UNAUTHORIZED', message } }, [
        'www-authenticate',
        'Bearer',
      ]);
    }
    if (path === '/v1/models' && req.method === 'GET') {
      return sendJson(reply, 200, modelList(router));
    }
    if (path === '/v1/router' && req.method === 'GET') {
      return sendJson(reply, 200, router.snapshot());
    }
    const byBody = BY_BODY.has(path) && req.method === 'POST';
    const unload = byBody ? null : UNLOAD.exec(path);
    if (unload !== null && req.method === 'POST') {
      const name = decodeURIComponent(unload[1]!);
      if (router.config.lookup(name) === undefined) return unknown(reply, name, router);
      router.unload(name).then(
        (stopped) => sendJson(reply, 200, { model: name, stopped }),
        (e: unknown) =>
          sendError(reply, { status: 500, code: 'E_INTERNAL', message: (e as Error).message }),
      );
      return;
    }
    const raw = byBody ? null : RAW.exec(path);
    if (raw === null && !byBody) {
      return sendError(reply, {
        status: 404,
        code: 'E_NOT_FOUND',
        message: `no route ${req.method} ${path} (POST /v1/chat/completions, /v1/completions, /v1/embeddings; GET /v1/models; /v1/router/models/<name>/raw/<path>)`,
      });
    }
    const priority = priorityOf(headerOf(req.headers, 'x-pilotfish-priority'));
    if (typeof priority === 'string') {
      return sendError(reply, { status: 400, code: 'E_VALIDATION', message: priority });
    }
    if (raw !== null) {
      const name = decodeURIComponent(raw[1]!);
      if (router.config.lookup(name) === undefined) return unknown(reply, name, router);
      const rest = `${raw[2] ?? '/'}${search}`;
      return router.proxy.forward(reply, req.body, name, rest, priority);
    }
    const model = modelOf(req.body);
    if (typeof model !== 'string' || model === '') {
      return sendError(reply, {
        status: 400,
        code: 'E_VALIDATION',
        message: 'body/model must be the name of a model (a JSON object with a string `model`)',
      });
    }
    router.proxy.forward(reply, req.body, model, target, priority);
  };
}

/** `X-Pilotfish-Priority: <integer>`: undefined when absent, a message when malformed. */
export function priorityOf(v: string | string[] | undefined): number | undefined | string {
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

function unknown(reply: ClientSide, name: string, router: FrontRouter): void {
  sendError(reply, unknownModel(name, router.config));
}
