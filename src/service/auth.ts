import { statSync } from 'node:fs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { allows, type Caller, type Scope, type TokenStore } from './tokens';
import { sendError } from './errors';

// Bearer tokens on every route but the health check and the API's own document: 401 without a
// token (or with one that is not ours), 403 with one whose scopes do not cover the route's.

/** What a route needs; routes say it in their `config`. */
export interface RouteAuth {
  scope?: Scope;
  /** Open to anyone: /v1/healthz, /v1/openapi.json. */
  open?: boolean;
}

/**
 * A store that reloads its file when `pilotfish serve token` changed it (a revocation counts
 * from the next request): one stat per request (~2 us), the file's identity compared (a save
 * renames a new file over it, so its inode changes even within the same millisecond).
 */
export class LiveTokens {
  private seen: string;

  constructor(
    private store: TokenStore,
    private readonly file: string,
    private readonly reopen: () => TokenStore,
  ) {
    this.seen = identityOf(file);
  }

  callerOf(token: string): Caller | undefined {
    const now = identityOf(this.file);
    if (now !== this.seen) {
      this.seen = now;
      this.store = this.reopen();
    }
    return this.store.callerOf(token);
  }
}

function identityOf(file: string): string {
  try {
    const st = statSync(file);
    return `${st.ino}:${st.mtimeMs}:${st.size}`;
  } catch {
    return 'none';
  }
}

/** The onRequest hook: the request's token, checked against what its route needs. */
export function authHook(tokens: LiveTokens) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const auth = req.routeOptions.config?.auth;
    if (auth?.open === true) return;
    const header = req.headers.authorization;
    const m = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    const caller = m === null ? undefined : tokens.callerOf(m[1]!);
    if (caller === undefined) {
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
    if (!allows(caller.scopes, needed)) {
      return sendError(
        reply,
        403,
        'E_FORBIDDEN',
        `this route needs a token with the '${needed}' scope (this one has ${caller.scopes.join(', ')})`,
      );
    }
    req.caller = caller;
  };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the route needs of a request's token (auth.ts). */
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    /** The holder of the request's token, once the auth hook has let it in; null on open routes. */
    caller: Caller | null;
  }
}
