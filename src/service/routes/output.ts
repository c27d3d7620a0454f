import type { FastifyInstance, FastifyReply } from 'fastify';
import { coerceError } from '../../errors';
import type { ServiceContext } from '../context';
import { sendError } from '../errors';
import { UID_PARAMS } from './params';
import { resumeFrom } from './events';
import { openEventStream } from './sse';

export const OUTPUT_QUERY = {
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

export interface OutputQuery {
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
        querystring: OUTPUT_QUERY,
      },
      config: { auth: { scope: 'read' } },
    },
    async (req, reply) => {
      const task = ctx.taskOf(req.params.uid);
      if (task === undefined) {
        return sendError(reply, 404, 'E_NOT_FOUND', `no task '${req.params.uid}' in this session`);
      }
      const follow = req.query.follow === 'true';
      const from = resumeFrom(req.headers['last-event-id'], req.query.offset);
      // a function call's output is what it printed while it ran (its pilot's stream files)
      const lines = ctx.tmgr.tail(task.uid, { follow, stream: req.query.stream ?? 'stdout' });
      if (!follow) return whole(reply, lines, from, req.headers.range);
      return streamOutput(reply, lines, from, () => task.state);
    },
  );
}

/**
 * A task's output lines as server-sent events from byte `from`: each `output` event's data a
 * JSON string, its id the byte offset after it; `end` (data: the task's state then) once the
 * lines end, `error` if they cannot be read.
 */
export async function streamOutput(
  reply: FastifyReply,
  lines: AsyncGenerator<string, void, undefined>,
  from: number,
  stateNow: () => string,
): Promise<void> {
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
    if (!sse.closed) await sse.send(`event: end\ndata: ${JSON.stringify(stateNow())}\n\n`);
  } catch (e) {
    const message = coerceError(e).message;
    if (!sse.closed) await sse.send(`event: error\ndata: ${JSON.stringify(message)}\n\n`);
  } finally {
    await lines.return(undefined);
    sse.end();
  }
}

/**
 * What the task wrote so far as text/plain: from byte `from`, or the byte range a `Range`
 * header asks for (`bytes=A-B`, `bytes=A-`, `bytes=-N`: 206 with Content-Range; one that starts
 * past the end: 416).
 */
export async function whole(
  reply: FastifyReply,
  lines: AsyncGenerator<string, void, undefined>,
  from: number,
  range: string | undefined,
): Promise<FastifyReply> {
  const parts: Buffer[] = [];
  for await (const line of lines) parts.push(Buffer.from(`${line}\n`, 'utf8'));
  const all = Buffer.concat(parts);
  void reply.type('text/plain; charset=utf-8').header('x-output-bytes', String(all.length));
  void reply.header('accept-ranges', 'bytes');
  if (range === undefined) return reply.send(all.subarray(Math.min(from, all.length)));
  const r = byteRange(range, all.length);
  if (r === undefined) {
    return sendError(
      reply,
      400,
      'E_VALIDATION',
      `a Range of one bytes=A-B, bytes=A- or bytes=-N is understood, not '${range}'`,
    );
  }
  if (r === 'unsatisfiable') {
    void reply.header('content-range', `bytes */${all.length}`);
    return sendError(
      reply,
      416,
      'E_RANGE',
      `the output has ${all.length} bytes: '${range}' is past its end`,
    );
  }
  return reply
    .code(206)
    .header('content-range', `bytes ${r.start}-${r.end}/${all.length}`)
    .send(all.subarray(r.start, r.end + 1));
}

/** One range of `bytes=` (RFC 9110 14.1.2), its end clamped to the size. */
function byteRange(
  header: string,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | undefined {
  const m = /^bytes=(\d{0,15})-(\d{0,15})$/.exec(header.trim());
  if (m === null || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const n = Number(m[2]);
    return n === 0 || size === 0
      ? 'unsatisfiable'
      : { start: Math.max(size - n, 0), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return undefined;
  return start >= size ? 'unsatisfiable' : { start, end };
}
