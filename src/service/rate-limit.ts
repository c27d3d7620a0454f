import type { FastifyInstance, FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';

/** Requests a minute a token may make unless the service or the token says otherwise. */
export const DEFAULT_RATE_PER_MINUTE = 120_000;

/**
 * Requests a minute per token (@fastify/rate-limit, a fixed one-minute window kept in memory):
 * a token's own `ratePerMinute` if it has one, else the service's. Runs after the auth hook
 * (route hooks come after the app's), so it counts a token, not an address; what is open to
 * all (the health check) counts by address. Over the limit: 429 E_RATE_LIMITED with
 * Retry-After. `perMinute` 0: no limit.
 */
export async function registerRateLimit(app: FastifyInstance, perMinute: number): Promise<void> {
  app.decorateRequest('caller', null);
  if (perMinute === 0) return;
  await app.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    timeWindow: 60_000,
    keyGenerator: (req: FastifyRequest) =>
      req.caller === null ? `ip:${req.ip}` : `token:${req.caller.id}`,
    max: (req: FastifyRequest) => Promise.resolve(req.caller?.ratePerMinute ?? perMinute),
    errorResponseBuilder: (req, ctx) =>
      Object.assign(
        new Error(
          `${req.caller === null ? 'this address' : `token ${req.caller.id}`} made more than ${ctx.max} requests in a minute: retry in ${ctx.after}`,
        ),
        { statusCode: ctx.statusCode, code: 'E_RATE_LIMITED' },
      ),
  });
}
