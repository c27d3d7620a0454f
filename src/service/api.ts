import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import { CONTROL_SCHEMAS } from '../client/control/handlers';
import type { Logger } from '../lib/logger';
import { compileSchema } from '../lib/runtime-ajv';
import type { RouterParts } from '../router/router';
import { SERVICE_SCHEMAS } from './schemas';
import { localRefs } from './openapi-refs';
import { authHook, type LiveTokens } from './auth';
import type { ServiceContext } from './context';
import {
  clientErrorHandler,
  errorHandler,
  HEADERS_TIMEOUT_S,
  REQUEST_TIMEOUT_S,
  sendError,
} from './errors';
import { dashboardRoutes } from './routes/dashboard';
import { eventRoutes } from './routes/events';
import { fileRoutes } from './routes/files';
import { metricsRoutes } from './metrics';
import { metaRoutes } from './routes/meta';
import { outputRoutes } from './routes/output';
import { pilotRoutes } from './routes/pilots';
import { routerRoutes } from './routes/router';
import { DEFAULT_RATE_PER_MINUTE, registerRateLimit } from './rate-limit';
import { serviceRoutes } from './routes/services';
import { taskFileRoutes } from './routes/task-files';
import { taskRoutes } from './routes/tasks';

const ALL = [...CONTROL_SCHEMAS, ...SERVICE_SCHEMAS];

export interface ApiOptions {
  tokens: LiveTokens;
  log: Logger;
  /** The largest request body, in bytes (default 16 MiB: a batch of 10,000 small tasks). */
  bodyLimitBytes?: number;
  /** True once the service has begun to stop: /v1/healthz says 503. */
  closing(): boolean;
  version: string;
  /** Requests a minute per token (a token's own rate wins; 0: no limit). */
  ratePerMinute?: number;
  /** Serve HTTPS with this certificate and key. */
  https?: { cert: Buffer; key: Buffer };
  /** The model router to serve (its OpenAI routes, docs/router.md), if the service has one. */
  router?: RouterParts;
}

/**
 * The jobs service's HTTP API (docs/service.md) on Fastify: every request checked by the
 * project's Ajv against schemas/ (no coercion, no removal), bearer tokens with scopes, errors
 * as JSON naming the path, the OpenAPI 3.1 document made from the same schemas.
 */
export async function buildApi(ctx: ServiceContext, opts: ApiOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    ...(opts.https !== undefined ? { https: opts.https } : {}),
    bodyLimit: opts.bodyLimitBytes ?? 16 * 1024 * 1024,
    // slow or stuck clients do not hold sockets: headers in 10 s, a request in 60 s (Node
    // checks every 30 s), each answered with a 408 in the API's error shape
    connectionTimeout: 0,
    requestTimeout: REQUEST_TIMEOUT_S * 1000,
    keepAliveTimeout: 10_000,
    clientErrorHandler,
    return503OnClosing: true,
    routerOptions: { maxParamLength: 1024 },
  });
  app.server.headersTimeout = HEADERS_TIMEOUT_S * 1000;
  // bodies are JSON: any other type is a 415 that says so, not a schema error on a string
  app.removeContentTypeParser('text/plain');
  app.setValidatorCompiler(({ schema }) => compileSchema(schema));
  for (const s of ALL) app.addSchema(s);
  await app.register(swagger, {
    // components named by the schemas' titles (TaskDescription), not def-0, def-1, ...
    transformObject: (d) =>
      localRefs('openapiObject' in d ? d.openapiObject : d.swaggerObject, ALL),
    refResolver: {
      buildLocalReference: (json, _base, _fragment, i) =>
        typeof json.title === 'string' ? json.title : `def-${i}`,
    },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'pilotfish jobs service',
        version: opts.version,
        description:
          'Submit and follow the tasks and pilots of one pilotfish session (docs/service.md).',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  app.addHook('onRequest', authHook(opts.tokens));
  await registerRateLimit(app, opts.ratePerMinute ?? DEFAULT_RATE_PER_MINUTE);
  app.setErrorHandler(errorHandler(opts.log));
  app.setNotFoundHandler((req, reply) =>
    sendError(reply, 404, 'E_NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`),
  );
  metricsRoutes(app, ctx, opts.router); // first: its onResponse hook counts every route's requests
  metaRoutes(app, ctx, () => opts.closing());
  taskRoutes(app, ctx);
  taskFileRoutes(app, ctx);
  fileRoutes(app, ctx);
  eventRoutes(app, ctx);
  outputRoutes(app, ctx);
  pilotRoutes(app, ctx);
  serviceRoutes(app, ctx);
  dashboardRoutes(app, ctx);
  if (opts.router !== undefined) routerRoutes(app, opts.router);
  await app.ready();
  return app;
}
