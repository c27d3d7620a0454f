import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context';

/** GET /v1/services: the session's service tasks, with the endpoint each is ready at. */
export function serviceRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  app.get(
    '/v1/services',
    {
      schema: {
        summary: "The session's service tasks and their endpoints (once ready)",
        tags: ['services'],
      },
      config: { auth: { scope: 'read' } },
    },
    (_req, reply) => {
      const services = [];
      for (const t of ctx.tasks()) {
        if (t.description.mode !== 'service') continue;
        services.push({
          uid: t.uid,
          ...(t.description.name !== undefined ? { name: t.description.name } : {}),
          state: t.state,
          attempt: t.attempt,
          ...(t.pilot !== undefined ? { pilot: t.pilot } : {}),
          // only while this attempt is up: a restarted one has none until it is ready again
          ...(t.endpoint !== undefined ? { endpoint: t.endpoint } : {}),
          ...(t.reason !== undefined ? { reason: t.reason } : {}),
        });
      }
      return reply.send({ services });
    },
  );
}
