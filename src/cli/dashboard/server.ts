import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { compileSchema } from '../../lib/runtime-ajv';
import type { Logger } from '../../lib/logger';
import { errorHandler, sendError } from '../../service/errors';
import { dashboardPage, sendTimeline } from '../../service/routes/dashboard';
import { OUTPUT_QUERY, streamOutput, whole, type OutputQuery } from '../../service/routes/output';
import { UID_PARAMS } from '../../service/routes/params';
import { resumeFrom, sendEvents } from '../../service/routes/events';
import {
  pageOf,
  pagedTwice,
  TASK_LIST_QUERY,
  type TaskListQuery,
} from '../../service/routes/task-list';
import { tailOutput } from '../../client/tasks/output';
import { stateOf } from '../session-info';
import { storeOutputSource } from '../store-source';
import { STORED_TASKS, storedDetail, StoreView } from './store-view';

// `pilotfish dashboard SESSION` (docs/dashboard.md): the dashboard of a session that no
// `pilotfish serve` holds (one a script runs, or one that ended), read-only from its store and
// journal: the routes the page reads, answered as the jobs service answers them, and no route
// that changes anything. On loopback, behind a token made for this run.

export interface ReadOnlyDashboard {
  /** Where the page is, with the token after `#` (the browser never sends that part). */
  readonly url: string;
  readonly token: string;
  close(): Promise<void>;
}

const QUERY_LIMITS = {
  type: 'object',
  additionalProperties: false,
  properties: {
    pending: { type: 'string', pattern: '^(0|[1-9][0-9]{0,2}|1000)$' },
    running: { type: 'string', pattern: '^(0|[1-9][0-9]{0,3}|10000)$' },
  },
} as const;
const EVENTS_QUERY = {
  type: 'object',
  additionalProperties: false,
  properties: { from: { type: 'string', pattern: '^[0-9]{1,15}$' } },
} as const;

/** Serves the read-only dashboard of the session in `dir` on 127.0.0.1:`port` (0: a free one). */
export async function serveStoreDashboard(
  dir: string,
  opts: { port?: number; log: Logger },
): Promise<ReadOnlyDashboard> {
  const view = new StoreView(dir);
  await view.fresh();
  const token = `pft_${randomBytes(24).toString('base64url')}`;
  const app = Fastify({ logger: false, requestTimeout: 60_000, return503OnClosing: true });
  app.removeContentTypeParser('text/plain');
  app.setValidatorCompiler(({ schema }) => compileSchema(schema));
  app.setErrorHandler(errorHandler(opts.log));
  app.addHook('onRequest', tokenCheck(token));
  app.setNotFoundHandler((req, reply) =>
    sendError(
      reply,
      404,
      'E_NOT_FOUND',
      `no route ${req.method} ${req.url.split('?')[0]} here (read-only)`,
    ),
  );
  routes(app, view);
  await app.listen({ host: '127.0.0.1', port: opts.port ?? 0 });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/dashboard/#token=${token}`,
    token,
    close: () => app.close(),
  };
}

/** Every route but the page's own files needs the token. */
function tokenCheck(token: string) {
  const want = Buffer.from(token);
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (req.routeOptions.config?.auth?.open === true) return;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    const got = Buffer.from(m?.[1] ?? '');
    if (got.length !== want.length || !timingSafeEqual(got, want)) {
      void reply.header('www-authenticate', 'Bearer realm="pilotfish"');
      return sendError(reply, 401, 'E_UNAUTHORIZED', 'the token this dashboard printed is needed');
    }
  };
}

function routes(app: FastifyInstance, view: StoreView): void {
  dashboardPage(app);
  app.get('/v1/whoami', (_req, reply) =>
    reply.send({
      session: view.session,
      id: 'dashboard',
      label: 'pilotfish dashboard (read-only)',
      scopes: ['read'],
      may: { submit: false, admin: false },
    }),
  );
  app.get<{ Querystring: { pending?: string; running?: string } }>(
    '/v1/status',
    { schema: { querystring: QUERY_LIMITS } },
    async (req, reply) => {
      const limits = {
        ...(req.query.pending !== undefined ? { pending: Number(req.query.pending) } : {}),
        ...(req.query.running !== undefined ? { running: Number(req.query.running) } : {}),
      };
      return reply.send(await view.status(limits));
    },
  );
  app.get<{ Querystring: TaskListQuery }>(
    '/v1/tasks',
    { schema: { querystring: TASK_LIST_QUERY } },
    async (req, reply) => {
      const twice = pagedTwice(req.query);
      if (twice !== undefined) {
        return sendError(reply, 400, 'E_VALIDATION', twice.message, [
          { path: twice.path, message: 'must not be given with after', in: 'querystring' },
        ]);
      }
      await view.fresh();
      return reply.send(pageOf(view.all(), req.query, () => view.latest(), STORED_TASKS));
    },
  );
  app.get<{ Params: { uid: string } }>(
    '/v1/tasks/:uid',
    { schema: { params: UID_PARAMS } },
    async (req, reply) => {
      await view.fresh();
      const t = view.task(req.params.uid);
      if (t === undefined) {
        return sendError(reply, 404, 'E_NOT_FOUND', `no task '${req.params.uid}' in this session`);
      }
      return reply.send(storedDetail(t));
    },
  );
  app.get<{ Params: { uid: string }; Querystring: OutputQuery }>(
    '/v1/tasks/:uid/output',
    { schema: { params: UID_PARAMS, querystring: OUTPUT_QUERY } },
    async (req, reply) => {
      const found = storeOutputSource(view.dir, req.params.uid);
      if (found === undefined) {
        return sendError(reply, 404, 'E_NOT_FOUND', `no task '${req.params.uid}' in this session`);
      }
      const follow = req.query.follow === 'true';
      const from = resumeFrom(req.headers['last-event-id'], req.query.offset);
      const lines = tailOutput(found.source, { follow, stream: req.query.stream ?? 'stdout' });
      if (!follow) return whole(reply, lines, from, req.headers.range);
      const stateNow = (): string => {
        const t = view.task(req.params.uid);
        return t === undefined ? 'NEW' : stateOf(t.profile);
      };
      return streamOutput(reply, lines, from, stateNow);
    },
  );
  app.get<{ Querystring: { from?: string } }>(
    '/v1/events',
    { schema: { querystring: EVENTS_QUERY } },
    (req, reply) =>
      sendEvents(reply, resumeFrom(req.headers['last-event-id'], req.query.from), (from, gone) =>
        view.events(from, gone),
      ),
  );
  app.get('/v1/services', async (_req, reply) => {
    await view.fresh();
    const services = view
      .all()
      .filter((t) => t.profile.mode === 'service')
      .map((t) => STORED_TASKS.summary(t));
    return reply.send({ services });
  });
  app.get('/v1/timeline', (_req, reply) => sendTimeline(reply, view.dir));
}
