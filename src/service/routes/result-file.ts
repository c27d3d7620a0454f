import * as path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { runtimeOf } from '../../client/runtime/runtime';
import { chooseFiles } from '../../lib/sandbox-files';
import type { ServiceContext } from '../context';
import { sendError } from '../errors';
import { UID_PARAMS } from './params';

/** Bytes read from a sandbox at a time (an agent answers at most 1 MiB per ask). */
const CHUNK = 1024 * 1024;

/**
 * Where a function call leaves a result too big to travel inline (the Python client's remote
 * functions: docs/python.md): `<its sandbox>/.pf-results/<uid>.<attempt>.bin`. The server
 * names the file from the task, never from the request, so a token reads only that.
 */
export function resultFileOf(sandbox: string, uid: string, attempt: number): string {
  return path.join(sandbox, '.pf-results', `${uid}.${attempt}.bin`);
}

/**
 * GET /v1/tasks/{uid}/result/file: the result file a DONE call wrote, read where it ran (from
 * this machine's files, or through its pilot's agent where they are not seen here), streamed.
 */
export function resultFileRoute(app: FastifyInstance, ctx: ServiceContext): void {
  app.get<{ Params: { uid: string } }>(
    '/v1/tasks/:uid/result/file',
    {
      schema: {
        summary: "A function call's result file (a result too big to travel inline)",
        tags: ['tasks'],
        params: UID_PARAMS,
      },
      config: { auth: { scope: 'read' } },
    },
    async (req, reply) => {
      const t = ctx.taskOf(req.params.uid);
      if (t === undefined) {
        return sendError(reply, 404, 'E_NOT_FOUND', `no task '${req.params.uid}' in this session`);
      }
      if (t.state !== 'DONE' || t.sandbox === undefined) {
        const why = t.state === 'DONE' ? 'it has no sandbox' : `it is ${t.state}`;
        return sendError(reply, 409, 'E_NOT_DONE', `task '${t.uid}' has no result file: ${why}`);
      }
      const file = resultFileOf(t.sandbox, t.uid, t.attempt);
      const asks = runtimeOf(ctx.session).links.files.sandbox;
      const files = await chooseFiles(
        t.sandbox,
        t.pilot === undefined ? undefined : asks.files(t.pilot),
      );
      const missing = (): ReturnType<typeof sendError> =>
        sendError(reply, 404, 'E_NOT_FOUND', `task '${t.uid}' left no result file`);
      if (files === undefined) return missing();
      const handle = await files.open(file).catch((e: { code?: string }) => {
        if (e.code === 'ENOENT') return undefined;
        throw e;
      });
      if (handle === undefined) return missing();
      const { size } = await handle.stat();
      reply.hijack();
      reply.raw.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': size,
      });
      try {
        const buf = Buffer.allocUnsafe(CHUNK);
        for (let at = 0; at < size;) {
          const { bytesRead } = await handle.read(buf, 0, buf.length, at);
          if (bytesRead === 0) break; // shorter than it said: the length tells the client
          at += bytesRead;
          const more = reply.raw.write(buf.subarray(0, bytesRead));
          if (!more) await new Promise((r) => reply.raw.once('drain', r));
          if (reply.raw.destroyed) break;
        }
      } catch {
        // the head is sent: a cut connection is how the client learns (its length is short)
        reply.raw.destroy();
        return reply;
      } finally {
        await handle.close();
      }
      reply.raw.end();
      return reply;
    },
  );
}
