import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { nodeClientSide } from '../../router/client-side';
import { BY_BODY, modelList, modelOf, priorityOf } from '../../router/http-front';
import { unknownModel } from '../../router/refusals';
import type { RouterParts } from '../../router/router';
import { sendError } from '../errors';

// The model router (docs/router.md) on the service's own address and tokens: the OpenAI routes
// need `submit` (a request may start a model on a pilot), the lists `read`, an unload `admin`.
// Bodies reach the proxy as the client sent them (a Buffer), and the answer streams back on
// the raw response (Fastify lets go of it).

export function routerRoutes(app: FastifyInstance, router: RouterParts): void {
  void app.register((scope, _opts, registered) => {
    // this scope only: bodies as bytes, whatever their type
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    for (const url of BY_BODY) {
      scope.post(
        url,
        {
          schema: {
            summary: `OpenAI's ${url}, sent to a replica of the body's model`,
            tags: ['router'],
          },
          config: { auth: { scope: 'submit' } },
        },
        (req, reply) => {
          const body = bodyOf(req);
          const model = modelOf(body);
          if (typeof model !== 'string' || model === '') {
            return sendError(
              reply,
              400,
              'E_VALIDATION',
              'body/model must be the name of a model (a JSON object with a string `model`)',
            );
          }
          return forward(router, req, reply, body, model, req.url);
        },
      );
    }
    scope.all<{ Params: { name: string; '*': string } }>(
      '/v1/router/models/:name/raw/*',
      {
        schema: { summary: "Any path of one model's server", tags: ['router'] },
        config: { auth: { scope: 'submit' } },
      },
      (req, reply) => {
        const { name } = req.params;
        if (router.config.lookup(name) === undefined) return unknown(reply, name, router);
        const query = req.url.includes('?') ? req.url.slice(req.url.indexOf('?')) : '';
        return forward(router, req, reply, bodyOf(req), name, `/${req.params['*']}${query}`);
      },
    );
    registered();
  });
  app.get(
    '/v1/models',
    {
      schema: {
        summary: "The router's models (OpenAI's list), with their replicas",
        tags: ['router'],
      },
      config: { auth: { scope: 'read' } },
    },
    (_req, reply) => reply.send(modelList(router)),
  );
  app.get(
    '/v1/router',
    {
      schema: { summary: "The router's state: its models, replicas and queues", tags: ['router'] },
      config: { auth: { scope: 'read' } },
    },
    (_req, reply) => reply.send(router.snapshot()),
  );
  app.post<{ Params: { name: string } }>(
    '/v1/router/models/:name/unload',
    {
      schema: {
        summary: 'Stops the replicas of a model; answers once they are gone',
        tags: ['router'],
      },
      config: { auth: { scope: 'admin' } },
    },
    async (req, reply) => {
      const { name } = req.params;
      if (router.config.lookup(name) === undefined) return unknown(reply, name, router);
      return { model: name, stopped: await router.unload(name) };
    },
  );
}

function bodyOf(req: FastifyRequest): Buffer {
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}

function forward(
  router: RouterParts,
  req: FastifyRequest,
  reply: FastifyReply,
  body: Buffer,
  model: string,
  path: string,
): FastifyReply | undefined {
  const priority = priorityOf(req.headers['x-pilotfish-priority']);
  if (typeof priority === 'string') return sendError(reply, 400, 'E_VALIDATION', priority);
  void reply.hijack();
  router.proxy.forward(nodeClientSide(req.raw, reply.raw), body, model, path, priority);
  return undefined;
}

function unknown(reply: FastifyReply, name: string, router: RouterParts): FastifyReply {
  const e = unknownModel(name, router.config);
  return sendError(reply, e.status, e.code, e.message);
}
