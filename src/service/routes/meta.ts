import type { FastifyInstance } from 'fastify';
import { dispatchControl } from '../../client/control/dispatch';
import type { ServiceContext } from '../context';
import { sendError } from '../errors';
import { allows } from '../tokens';

const STATUS_QUERY = {
  type: 'object',
  additionalProperties: false,
  properties: {
    pending: {
      type: 'string',
      pattern: '^(0|[1-9][0-9]{0,2}|1000)$',
      description: 'How many of the oldest pending tasks to explain, 0 to 1000 (default 5)',
    },
    running: {
      type: 'string',
      pattern: '^(0|[1-9][0-9]{0,3}|10000)$',
      description: 'How many running tasks to list, 0 to 10000 (default 20)',
    },
  },
} as const;

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
  app.get<{ Querystring: { pending?: string; running?: string } }>(
    '/v1/status',
    {
      schema: {
        summary: 'The session now: pilots, tasks per state, running and oldest pending tasks',
        tags: ['service'],
        querystring: STATUS_QUERY,
      },
      config: { auth: { scope: 'read' } },
    },
    async (req, reply) => {
      const r = await dispatchControl(ctx.control, {
        op: 'status',
        ...(req.query.pending !== undefined ? { pending: Number(req.query.pending) } : {}),
        ...(req.query.running !== undefined ? { running: Number(req.query.running) } : {}),
      });
      if (!r.ok) return sendError(reply, 500, r.error.code, r.error.message);
      return reply.send(r.result);
    },
  );
  app.get(
    '/v1/whoami',
    {
      schema: {
        summary:
          "The token's id, label and scopes, and what it may do (a page shows or hides its buttons)",
        tags: ['service'],
      },
      config: { auth: { scope: 'read' } },
    },
    (req, reply) => {
      const c = req.caller!; // the auth hook set it: the route needs a token
      return reply.send({
        session: ctx.session.uid,
        id: c.id,
        ...(c.label !== undefined ? { label: c.label } : {}),
        scopes: c.scopes,
        may: { submit: allows(c.scopes, 'submit'), admin: allows(c.scopes, 'admin') },
      });
    },
  );
  app.get(
    '/v1/openapi.json',
    { schema: { hide: true }, config: { auth: { open: true } } },
    (_req, reply) => reply.send(app.swagger()),
  );
}
