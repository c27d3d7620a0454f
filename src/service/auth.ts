import { statSync } from 'node:fs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { allows, type Scope, type TokenStore } from './tokens';
import { sendError } from './errors';

// Bearer tokens on every route but the health check and the API's own document: 401 without a
// token (or with one that is not ours), 403 with one whose scopes do not cover the route's.

/** What a route needs; routes say it in their `config`. */
export interface RouteAuth {
  scope?: Scope;
  /** Open to anyone: /v1/healthz, /v1/openapi.json. */
  open?: boolean;
}

/** A store that reloads its file when `pilotfish serve token` changed it (revocations). */
export class LiveTokens {
  private mtimeMs = 0;
  private checked = 0;

  constructor(
    private store: TokenStore,
    private readonly file: string,
    private readonly reopen: () => TokenStore,
  ) {
    this.mtimeMs = mtimeOf(file);
  }

  scopesOf(token: string): Scope[] | undefined {
    const now = Date.now();
    if (now - this.checked > 250) {
      this.checked = now;
      const m = mtimeOf(this.file);
      if (m !== this.mtimeMs) {
        this.mtimeMs = m;
        this.store = this.reopen();
      }
    }
    return this.store.scopesOf(token);
  }
}

function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

/** The onRequest hook: the request's token, checked against what its route needs. */
export function authHook(tokens: LiveTokens) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const auth = req.routeOptions.config?.auth;
    if (auth?.open === true) return;
    const header = req.headers.authorization;
    const m = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    const scopes = m === null ? undefined : tokens.scopesOf(m[1]!);
    if (scopes === undefined) {
      void reply.header('www-authenticate', 'Bearer realm="pilotfish"');
      return sendError(
        reply,
        401,
        'E_UNAUTHORIZED',
        m === null
          ? 'a bearer token is required (Authorization: Bearer <token>)'
          : 'the token is not valid here',
      );
    }
    const needed = auth?.scope ?? 'admin';
    if (!allows(scopes, needed)) {
      return sendError(
        reply,
        403,
        'E_FORBIDDEN',
        `this route needs a token with the '${needed}' scope (this one has ${scopes.join(', ')})`,
      );
    }
  };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the route needs of a request's token (auth.ts). */
    auth?: RouteAuth;
  }
}
