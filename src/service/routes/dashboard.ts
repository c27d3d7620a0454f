import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { readProfile } from '../../profile/read';
import { renderTimeline, TIMELINE_SCRIPT } from '../../profile/timeline';
import type { ServiceContext } from '../context';
import { sendError } from '../errors';

// The dashboard (docs/dashboard.md): static files built from web/dashboard by
// scripts/build-dashboard.js into dist/dashboard, served open (they hold no data: the page asks
// the API with the token it is given), under a policy that lets the page reach nothing but
// this server. The timeline view shows GET /v1/timeline's page in a sandboxed frame.

/** The timeline page's own script, allowed by its hash (its data is JSON, not script). */
const TIMELINE_HASH = `'sha256-${createHash('sha256').update(TIMELINE_SCRIPT).digest('base64')}'`;

/**
 * Scripts and connections to this server only; no frame may hold the dashboard; its own frames
 * are srcdoc (the timeline). Inline styles are allowed: the timeline's legend uses them.
 */
const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src 'self' ${TIMELINE_HASH}`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
const TIMELINE_CSP = `default-src 'none'; script-src ${TIMELINE_HASH}; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'`;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Where the built dashboard is: dist/dashboard of the package (from dist/src/service/routes) or
 * of the repository (from src/service/routes under ts-jest).
 */
export function dashboardDir(): string | undefined {
  return [
    path.resolve(__dirname, '..', '..', '..', 'dashboard'),
    path.resolve(__dirname, '..', '..', '..', 'dist', 'dashboard'),
  ].find((d) => existsSync(path.join(d, 'index.html')));
}

/** GET / (to the dashboard), /dashboard/ and its files, GET /v1/timeline. */
export function dashboardRoutes(app: FastifyInstance, ctx: ServiceContext): void {
  dashboardPage(app);
  app.get(
    '/v1/timeline',
    {
      schema: {
        summary: "The session's timeline now: the page `pilotfish timeline` writes (text/html)",
        tags: ['service'],
      },
      config: { auth: { scope: 'read' } },
    },
    async (_req, reply) => sendTimeline(reply, ctx.session.dir),
  );
}

/** The timeline of the session in `dir` now, under its own policy (its script by hash). */
export async function sendTimeline(reply: FastifyReply, dir: string): Promise<FastifyReply> {
  const html = renderTimeline(await readProfile(dir));
  return reply
    .type('text/html; charset=utf-8')
    .header('content-security-policy', TIMELINE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'no-store')
    .send(html);
}

/** GET / (to the dashboard), /dashboard/ and its files: open, they hold no data. */
export function dashboardPage(app: FastifyInstance): void {
  const dir = dashboardDir();
  // read once: a handful of small files, the same for every request
  const files = new Map<string, Buffer>();
  const fileOf = (name: string): Buffer | undefined => {
    if (dir === undefined || !/^[a-z0-9-]+\.(html|js|css|svg)$/.test(name)) return undefined;
    let body = files.get(name);
    if (body === undefined) {
      const at = path.join(dir, name);
      if (!existsSync(at)) return undefined;
      body = readFileSync(at);
      files.set(name, body);
    }
    return body;
  };
  const serve = (reply: FastifyReply, name: string): FastifyReply => {
    const body = fileOf(name);
    if (body === undefined) {
      const why =
        dir === undefined
          ? 'the dashboard is not built here (npm run build makes dist/dashboard)'
          : `the dashboard has no file '${name}'`;
      return sendError(reply, 404, 'E_NOT_FOUND', why);
    }
    return reply
      .type(TYPES[path.extname(name)]!)
      .header('content-security-policy', DASHBOARD_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', name === 'index.html' ? 'no-cache' : 'public, max-age=300')
      .send(body);
  };
  const open = { schema: { hide: true }, config: { auth: { open: true } } };
  app.get('/', open, (_req, reply) => reply.redirect('/dashboard/'));
  app.get('/dashboard', open, (_req, reply) => reply.redirect('/dashboard/'));
  app.get('/dashboard/', open, (_req, reply) => serve(reply, 'index.html'));
  app.get<{ Params: { file: string } }>('/dashboard/:file', open, (req, reply) =>
    serve(reply, req.params.file),
  );
}
