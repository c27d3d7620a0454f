import { createWriteStream, promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform, type Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context';
import { sendError } from '../errors';

/** The largest file one upload may be. */
export const MAX_UPLOAD_BYTES = 1024 * 1024 * 1024;

const FILE_PARAMS = {
  type: 'object',
  additionalProperties: false,
  required: ['*'],
  properties: {
    '*': {
      type: 'string',
      minLength: 1,
      maxLength: 1024,
      // relative, plain names: no '..', no empty part, no hidden part
      pattern: '^(?!.*(^|/)\\.)[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$',
      description: "A path in the service's files directory, e.g. `pf-remote/<sha256>`",
    },
  },
} as const;

/**
 * PUT /v1/files/{path} puts a file into the service's files directory (`DIR/files/`), where
 * tasks stage their inputs from (`client://<path>`: docs/service.md, "Files"); HEAD tells
 * whether it is there and its size. The body is the file's bytes (application/octet-stream),
 * written to a temporary file beside it and renamed into place once whole, so a task never
 * reads half a file and a failed upload leaves nothing. No part of the path may be a link.
 */
export function fileRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  const root = ctx.files.files;
  void app.register((scope, _opts, done) => {
    scope.addContentTypeParser('application/octet-stream', (_req, payload, next) =>
      next(null, payload),
    );
    scope.put<{ Params: { '*': string } }>(
      '/v1/files/*',
      {
        schema: {
          summary: "Put a file into the service's files directory (tasks stage inputs from it)",
          tags: ['files'],
          params: FILE_PARAMS,
        },
        config: { auth: { scope: 'submit' } },
      },
      async (req, reply) => {
        const rel = req.params['*'];
        if (!(req.body instanceof Object) || typeof (req.body as Readable).pipe !== 'function') {
          return sendError(
            reply,
            415,
            'E_UNSUPPORTED_MEDIA_TYPE',
            'the body must be application/octet-stream',
          );
        }
        const declared = Number(req.headers['content-length'] ?? NaN);
        if (declared > MAX_UPLOAD_BYTES) {
          return sendError(
            reply,
            413,
            'E_TOO_LARGE',
            `a file may be at most ${MAX_UPLOAD_BYTES} bytes`,
          );
        }
        const target = path.join(root, rel);
        const bad = await linkOnTheWay(root, path.dirname(rel));
        if (bad !== undefined) {
          return sendError(
            reply,
            409,
            'E_NOT_A_DIRECTORY',
            `'${bad}' is not a directory of the files directory`,
          );
        }
        await fsp.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
        const part = path.join(
          path.dirname(target),
          `.${path.basename(target)}.${randomBytes(6).toString('hex')}.part`,
        );
        let bytes = 0;
        const count = new Transform({
          transform(chunk: Buffer, _enc, cb) {
            bytes += chunk.length;
            if (bytes > MAX_UPLOAD_BYTES) cb(new Error('too large'));
            else cb(null, chunk);
          },
        });
        try {
          await pipeline(
            req.body as Readable,
            count,
            createWriteStream(part, { mode: 0o600, flags: 'wx' }),
          );
          await fsp.rename(part, target);
        } catch (e) {
          await fsp.rm(part, { force: true });
          if (bytes > MAX_UPLOAD_BYTES) {
            return sendError(
              reply,
              413,
              'E_TOO_LARGE',
              `a file may be at most ${MAX_UPLOAD_BYTES} bytes`,
            );
          }
          throw e;
        }
        return reply.code(201).send({ path: rel, bytes });
      },
    );
    scope.head<{ Params: { '*': string } }>(
      '/v1/files/*',
      {
        schema: {
          summary: 'Whether a file is in the files directory',
          tags: ['files'],
          params: FILE_PARAMS,
        },
        config: { auth: { scope: 'read' } },
      },
      async (req, reply) => {
        const rel = req.params['*'];
        const st = await fsp.lstat(path.join(root, rel)).catch(() => undefined);
        const linked = await linkOnTheWay(root, path.dirname(rel));
        if (st === undefined || !st.isFile() || linked !== undefined) return reply.code(404).send();
        return reply.header('content-length', st.size).code(200).send();
      },
    );
    done();
  });
}

/** The first part of `rel` (a directory path under `root`) that exists and is not a directory. */
async function linkOnTheWay(root: string, rel: string): Promise<string | undefined> {
  if (rel === '.' || rel === '') return undefined;
  let at = root;
  for (const part of rel.split('/')) {
    at = path.join(at, part);
    const st = await fsp.lstat(at).catch(() => undefined);
    if (st === undefined) return undefined; // made below, as a directory
    if (!st.isDirectory()) return path.relative(root, at);
  }
  return undefined;
}
