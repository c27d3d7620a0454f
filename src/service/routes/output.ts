import type { FastifyInstance, FastifyReply } from 'fastify';
import { coerceError } from '../../errors';
import type { ServiceContext } from '../context';
import { sendError } from '../errors';
import { UID_PARAMS } from './params';
import { openEventStream } from './sse';

const outputQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    stream: { enum: ['stdout', 'stderr'], description: 'Which output (default stdout)' },
    offset: {
      type: 'string',
      pattern: '^[0-9]{1,15}$',
      description: 'Start at this byte of the output (follow: Last-Event-ID wins)',
    },
    follow: {
      enum: ['true', 'false'],
      description: 'true: server-sent events of new output until the task ends',
    },
  },
} as const;

interface OutputQuery {
  stream?: 'stdout' | 'stderr';
  offset?: string;
  follow?: 'true' | 'false';
}

/**
 * GET /v1/tasks/{uid}/output: a task's stdout or stderr from a byte offset, whole lines as
 * written (a last line without a newline gets one). With `follow=true`, server-sent events:
 * each `output` event's data is a JSON string of new output and its id the byte offset after it,
 * so a client that reconnects with Last-Event-ID goes on at the next byte; an `end` event (data:
 * the task's state) closes the stream once the task has ended and all it wrote was sent.
 */
export function outputRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  app.get<{ Params: { uid: string }; Querystring: OutputQuery }>(
    '/v1/tasks/:uid/output',
    {
      schema: {
        summary: "A task's output from a byte offset; follow=true: as server-sent events",
        tags: ['tasks'],
        params: UID_PARAMS,
        querystring: outputQuery,
      },
      config: { auth: { scope: 'read' } },
    },
    async (req, reply) => {
      const task = ctx.taskOf(req.params.uid);
      if (task === undefined) {
        return sendError(reply, 404, 'E_NOT_FOUND', `no task '${req.params.uid}' in this session`);
      }
      const follow = req.query.follow === 'true';
      const header = req.headers['last-event-id'];
      const resumed = typeof header === 'string' && /^[0-9]{1,15}$/.test(header.trim());
      const from = Number(resumed ? header.trim() : (req.query.offset ?? 0));
      // throws for a function call (it writes no output): a 404 before any byte is sent
      const lines = ctx.tmgr.tail(task.uid, { follow, stream: req.query.stream ?? 'stdout' });
      if (!follow) return whole(reply, lines, from);
      const sse = openEventStream(reply);
      let at = 0;
      try {
        for await (const line of lines) {
          if (sse.closed) break;
          const chunk = Buffer.from(`${line}\n`, 'utf8');
          const start = at;
          at += chunk.length;
          if (at <= from) continue;
          const text = chunk.subarray(Math.max(from - start, 0)).toString('utf8');
          await sse.send(`id: ${at}\nevent: output\ndata: ${JSON.stringify(text)}\n\n`);
        }
        if (!sse.closed) await sse.send(`event: end\ndata: ${JSON.stringify(task.state)}\n\n`);
      } catch (e) {
        const message = coerceError(e).message;
        if (!sse.closed) await sse.send(`event: error\ndata: ${JSON.stringify(message)}\n\n`);
      } finally {
        await lines.return(undefined);
        sse.end();
      }
    },
  );
}

/** What the task wrote so far, from byte `from`, as text/plain. */
async function whole(
  reply: FastifyReply,
  lines: AsyncGenerator<string, void, undefined>,
  from: number,
): Promise<FastifyReply> {
  const parts: Buffer[] = [];
  for await (const line of lines) parts.push(Buffer.from(`${line}\n`, 'utf8'));
  const all = Buffer.concat(parts);
  return reply
    .type('text/plain; charset=utf-8')
    .header('x-output-bytes', String(all.length))
    .send(all.subarray(Math.min(from, all.length)));
}
