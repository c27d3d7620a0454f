import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context';

/** /v1/healthz (open), /v1/openapi.json (open), /v1/status (the control socket's status). */
export function metaRoutes(
  app: FastifyInstance,
  ctx: ServiceContext,
  closing: () => boolean,
): void {
  app.get(
    '/v1/healthz',
    {
      schema: { summary: 'Whether the service is up (no token needed)', tags: ['service'] },
      config: { auth: { open: true } },
    },
    async (_req, reply) =>
      reply.code(closing() ? 503 : 200).send({ ok: !closing(), session: ctx.session.uid }),
  );
  app.get(
    '/v1/openapi.json',
    { schema: { hide: true }, config: { auth: { open: true } } },
    (_req, reply) => reply.send(app.swagger()),
  );
}
