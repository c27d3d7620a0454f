import { createReadStream, promises as fsp } from 'node:fs';
import * as path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Task } from '../../client/task';
import type { ServiceContext } from '../context';
import { sendError } from '../errors';
import { UID_PARAMS } from './params';

const DELETE_QUERY = {
  type: 'object',
  additionalProperties: false,
  properties: {
    purge: {
      enum: ['true', 'false'],
      description: "true: remove the task's sandbox and its artifacts from disk too",
    },
  },
} as const;

const ARTIFACT_PARAMS = {
  type: 'object',
  additionalProperties: false,
  required: ['uid', '*'],
  properties: {
    uid: { type: 'string', minLength: 1, maxLength: 1024 },
    '*': { type: 'string', minLength: 1, maxLength: 4096, description: 'the path `list` names' },
  },
} as const;

/** One file a task staged out to the service's host. */
interface Artifact {
  path: string;
  bytes: number;
  modified: string;
}

/** A task's staged-out artifacts (list, download) and its deletion (docs/service.md). */
export function taskFileRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  const dirOf = (uid: string): string => path.join(ctx.files.artifacts, uid);
  const notFound = (uid: string) => `no task '${uid}' in this session`;

  app.get<{ Params: { uid: string } }>(
    '/v1/tasks/:uid/artifacts',
    {
      schema: {
        summary: 'The files a task staged out to the service (its relative client:// targets)',
        tags: ['tasks'],
        params: UID_PARAMS,
      },
      config: { auth: { scope: 'read' } },
    },
    async (req, reply) => {
      const t = ctx.taskOf(req.params.uid);
      if (t === undefined) return sendError(reply, 404, 'E_NOT_FOUND', notFound(req.params.uid));
      return { uid: t.uid, artifacts: await listFiles(dirOf(t.uid)) };
    },
  );

  app.get<{ Params: { uid: string; '*': string } }>(
    '/v1/tasks/:uid/artifacts/*',
    {
      schema: { summary: 'Download one artifact', tags: ['tasks'], params: ARTIFACT_PARAMS },
      config: { auth: { scope: 'read' } },
    },
    async (req, reply) => {
      const t = ctx.taskOf(req.params.uid);
      if (t === undefined) return sendError(reply, 404, 'E_NOT_FOUND', notFound(req.params.uid));
      const file = await inside(dirOf(t.uid), req.params['*']);
      if (file === undefined) {
        return sendError(
          reply,
          404,
          'E_NOT_FOUND',
          `task '${t.uid}' has no artifact '${req.params['*']}' (GET /v1/tasks/${t.uid}/artifacts lists them)`,
        );
      }
      return reply
        .type('application/octet-stream')
        .header('content-length', String(file.bytes))
        .header(
          'content-disposition',
          `attachment; filename="${path.basename(file.path).replace(/["\\\r\n]/g, '_')}"`,
        )
        .send(createReadStream(file.path));
    },
  );

  app.delete<{ Params: { uid: string }; Querystring: { purge?: 'true' | 'false' } }>(
    '/v1/tasks/:uid',
    {
      schema: {
        summary: 'Delete a final task (purge=true: its sandbox and artifacts too)',
        tags: ['tasks'],
        params: UID_PARAMS,
        querystring: DELETE_QUERY,
      },
      config: { auth: { scope: 'submit' } },
    },
    async (req, reply) => {
      const t = ctx.taskOf(req.params.uid);
      if (t === undefined) return sendError(reply, 404, 'E_NOT_FOUND', notFound(req.params.uid));
      if (!t.final) {
        return sendError(
          reply,
          409,
          'E_NOT_FINAL',
          `task '${t.uid}' is ${t.state}: only a final task is deleted (cancel it first)`,
        );
      }
      const removed: string[] = [];
      if (req.query.purge === 'true') {
        for (const dir of [ownSandbox(ctx, t), dirOf(t.uid)]) {
          if (dir === undefined) continue;
          const there = await fsp.lstat(dir).then(
            (s) => s.isDirectory(),
            () => false,
          );
          if (!there) continue;
          await fsp.rm(dir, { recursive: true, force: true });
          removed.push(dir);
        }
      }
      ctx.deleted.add(t.uid);
      return { uid: t.uid, deleted: true, removed };
    },
  );
}

/**
 * The task's own sandbox directory, if it had one: never its pilot's (a task that ran in the
 * pilot's sandbox shares it), only `<pilot sandbox>/<uid>`.
 */
function ownSandbox(ctx: ServiceContext, t: Task): string | undefined {
  const pilot = t.pilot === undefined ? undefined : ctx.pmgr.get(t.pilot)?.sandbox;
  if (t.sandbox === undefined || pilot === undefined) return undefined;
  return path.resolve(t.sandbox) === path.join(path.resolve(pilot), t.uid) ? t.sandbox : undefined;
}

/** Every regular file under `dir` (symbolic links not followed), by path relative to it. */
async function listFiles(dir: string): Promise<Artifact[]> {
  const out: Artifact[] = [];
  const walk = async (rel: string): Promise<void> => {
    let entries;
    try {
      entries = await fsp.readdir(path.join(dir, rel), { withFileTypes: true });
    } catch {
      return; // none staged (yet)
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) await walk(r);
      else if (e.isFile()) {
        const st = await fsp.stat(path.join(dir, r));
        out.push({ path: r, bytes: st.size, modified: st.mtime.toISOString() });
      }
    }
  };
  await walk('');
  return out;
}

/**
 * `rel` under `dir` if it names a regular file there: no `..` out of it, and no symbolic link
 * on the way (a task could leave one that points at any file of the service's owner).
 */
async function inside(
  dir: string,
  rel: string,
): Promise<{ path: string; bytes: number } | undefined> {
  const norm = path.posix.normalize(rel);
  if (norm.startsWith('/') || norm === '..' || norm.startsWith('../')) return undefined;
  let at = dir;
  for (const part of norm.split('/')) {
    at = path.join(at, part);
    const st = await fsp.lstat(at).catch(() => undefined);
    if (st === undefined || st.isSymbolicLink()) return undefined;
    if (at !== path.join(dir, norm) && !st.isDirectory()) return undefined;
    if (at === path.join(dir, norm)) return st.isFile() ? { path: at, bytes: st.size } : undefined;
  }
  return undefined;
}
