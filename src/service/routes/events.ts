import type { FastifyInstance } from 'fastify';
import { runtimeOf } from '../../client/runtime/runtime';
import type { ServiceContext } from '../context';

/** A comment line this often keeps proxies and clients from timing an idle stream out. */
const HEARTBEAT_MS = 15_000;

const eventsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    from: {
      type: 'string',
      pattern: '^[0-9]{1,15}$',
      description:
        'Start after this event id (as Last-Event-ID does; the header wins); 0: from the first',
    },
  },
} as const;

/**
 * GET /v1/events: every notification the session's store accepts, as server-sent events in the
 * store's order, from the first or after `Last-Event-ID`. An event's id is its position in the
 * store (1, 2, ...), so a client that reconnects with the last id it saw misses nothing and
 * sees nothing twice, across restarts of the service too (the store is the session's).
 */
export function eventRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  app.get<{ Querystring: { from?: string } }>(
    '/v1/events',
    {
      schema: {
        summary: 'Every state change of the session, as server-sent events (resumable)',
        tags: ['events'],
        querystring: eventsQuery,
      },
      config: { auth: { scope: 'read' } },
    },
    async (req, reply) => {
      const header = req.headers['last-event-id'];
      const last =
        typeof header === 'string' && /^[0-9]{1,15}$/.test(header.trim())
          ? header.trim()
          : req.query.from;
      const from = last === undefined ? 0 : Number(last);
      const raw = reply.raw;
      reply.hijack();
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      raw.write(': pilotfish events\n\n');
      const watch = runtimeOf(ctx.session).store.watch(from)[Symbol.asyncIterator]();
      let open = true;
      const heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), HEARTBEAT_MS);
      const end = (): void => {
        if (!open) return;
        open = false;
        clearInterval(heartbeat);
        void watch.return?.();
      };
      raw.on('close', end);
      try {
        for (;;) {
          const next = await watch.next();
          if (next.done === true || !open) break;
          const { cursor, notifications } = next.value;
          let text = '';
          notifications.forEach((n, i) => {
            text += `id: ${cursor + i + 1}\nevent: ${n.kind}\ndata: ${JSON.stringify(n)}\n\n`;
          });
          // a slow client holds the stream, not the server's memory: wait until it has read
          if (!raw.write(text)) await new Promise((resolve) => raw.once('drain', resolve));
        }
      } finally {
        end();
        raw.end();
      }
    },
  );
}
