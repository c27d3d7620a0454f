import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServiceContext } from '../context';
import { openEventStream } from './sse';

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
 * sees nothing twice, across restarts of the service too (the store is the session's). Every
 * stream reads the one rendering of the service's EventFeed.
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
    (req, reply) =>
      sendEvents(reply, resumeFrom(req.headers['last-event-id'], req.query.from), (from, gone) =>
        ctx.events.stream(from, gone),
      ),
  );
}

/** Where a stream resumes: after its Last-Event-ID (a browser's reconnect), else `from`, else 0. */
export function resumeFrom(
  header: string | string[] | undefined,
  from: string | undefined,
): number {
  const resumed = typeof header === 'string' && /^[0-9]{1,15}$/.test(header.trim());
  return Number(resumed ? header.trim() : (from ?? 0));
}

/** The events `stream` gives after `from`, as server-sent events, until the client goes. */
export async function sendEvents(
  reply: FastifyReply,
  from: number,
  stream: (from: number, gone: AbortSignal) => AsyncIterable<string>,
): Promise<void> {
  const sse = openEventStream(reply);
  const gone = new AbortController();
  sse.onClose(() => gone.abort());
  try {
    for await (const text of stream(from, gone.signal)) {
      if (sse.closed) break;
      await sse.send(text);
    }
  } finally {
    gone.abort();
    sse.end();
  }
}
