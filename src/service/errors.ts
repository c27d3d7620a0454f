import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorObject } from 'ajv';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { coerceError, errorMeta, ValidationError, type ValidationIssue } from '../errors';
import type { Logger } from '../lib/logger';
import { narrowIssues } from '../lib/validate';

// Errors of the HTTP API: JSON `{error: {code, message, issues?}}`, an issue per JSON path with
// what was allowed; never a stack. A request the API refuses (400-499) is the client's; anything
// else is logged.

/** How long a client may take to send a request's headers, and all of it (slow clients). */
export const HEADERS_TIMEOUT_S = 10;
export const REQUEST_TIMEOUT_S = 60;

/** The HTTP status of the project's errors a request can meet. */
const STATUS_OF: Record<string, number> = {
  E_USAGE: 400,
  E_TOO_LARGE: 413,
  E_CLOSING: 503,
  E_TASK_ENDED: 409,
  E_OUTPUT_UNAVAILABLE: 404,
  E_TIMEOUT: 504,
};

export interface ApiError {
  code: string;
  message: string;
  issues?: (ValidationIssue & { in?: string })[];
}

export function sendError(
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  issues?: ApiError['issues'],
): FastifyReply {
  return reply
    .code(status)
    .type('application/json')
    .send({ error: { code, message, ...(issues !== undefined ? { issues } : {}) } });
}

/** Fastify's error handler: validation, bodies, limits, our own errors, then the unexpected. */
export function errorHandler(log: Logger) {
  return (e: FastifyError, req: FastifyRequest, reply: FastifyReply): FastifyReply => {
    if (e.validation !== undefined) {
      const where = e.validationContext ?? 'body';
      const issues = narrowIssues(e.validation as ErrorObject[]).map((i) => ({ ...i, in: where }));
      const text = issues.map((i) => `${where}${i.path === '/' ? '' : i.path} ${i.message}`);
      return sendError(
        reply,
        400,
        'E_VALIDATION',
        `invalid request: ${text.slice(0, 5).join('; ')}`,
        issues,
      );
    }
    if (e instanceof ValidationError) {
      const issues = e.issues.map((i) => ({ ...i, in: 'body' }));
      return sendError(reply, 400, 'E_VALIDATION', e.message, issues);
    }
    const status = e.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Fastify's own: a body that is not JSON, too large, a bad content type, ...
      return sendError(reply, status, e.code ?? 'E_BAD_REQUEST', e.message);
    }
    const err = coerceError(e);
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code in STATUS_OF) {
      return sendError(reply, STATUS_OF[code]!, code, err.message);
    }
    log.error('HTTP request failed', { method: req.method, url: req.url, ...errorMeta(err) });
    return sendError(
      reply,
      500,
      'E_INTERNAL',
      'the server failed on this request (its log says why)',
    );
  };
}

/** What a connection gets when what it sent is not a request the server could read at all. */
const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [
    408,
    'E_REQUEST_TIMEOUT',
    `the request did not arrive in time (its headers within ${HEADERS_TIMEOUT_S} s, all of it within ${REQUEST_TIMEOUT_S} s)`,
  ],
  HPE_HEADER_OVERFLOW: [431, 'E_HEADERS_TOO_LARGE', 'the request head is larger than 16 KiB'],
};

/**
 * The raw reply (status line, headers, the API's error body) to a connection whose bytes broke
 * HTTP itself (Node's `clientError`: no request, so no route and no error handler).
 */
export function clientErrorResponse(code: string | undefined): string {
  const [status, errCode, message] = CLIENT_ERRORS[code ?? ''] ?? [
    400,
    'E_BAD_REQUEST',
    'not an HTTP/1.1 request the server can read',
  ];
  const body = JSON.stringify({ error: { code: errCode, message } });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]!}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `Content-Type: application/json\r\nConnection: close\r\n\r\n${body}`
  );
}

/** Fastify's clientErrorHandler: the API's error shape, then the connection is closed. */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Duplex): void {
  // a reset connection is gone already: nothing to answer
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) socket.write(clientErrorResponse(err.code));
  socket.destroy();
}
