import * as http from 'node:http';
import * as https from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import { PilotfishError, UsageError, type ValidationIssue } from '../errors';
import { EXIT } from './args';
import type { Server } from './server-flags';

export {
  addServerOptions,
  serverOf,
  wantsServer,
  type Server,
  type ServerFlags,
} from './server-flags';

// The CLI's side of `pilotfish serve`'s HTTP API (docs/service.md): where the server is and its
// token, one request (JSON in, JSON out), a server-sent event stream, and what an error the
// server answers is for a command (its message on stderr, an exit status). node:http(s), not
// fetch: fetch takes no CA, and a service's certificate is often self-signed.

/** How long a request may wait for its whole answer; one that does not come is no answer. */
export const REQUEST_MS = 30_000;
/** A stream silent this long has dropped: the server writes a comment every 15 s. */
export const STREAM_IDLE_MS = 45_000;

/** Thrown when the server answers with an error: its HTTP status, code, message, issues. */
export class ServerError extends PilotfishError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues: (ValidationIssue & { in?: string })[] = [],
  ) {
    super(message);
  }
}

/** Thrown when no server answers at the URL: refused, no such host, or silent past the timeout. */
export class ServerUnreachableError extends PilotfishError {
  readonly code = 'E_UNREACHABLE';
}

/** Errors of a connection that mean no server answers there. */
const UNREACHABLE =
  /^(ENOENT|ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|EPIPE|ETIMEDOUT|E_NO_ANSWER)$/;

/** A failed request as one of ours: unreachable, a certificate not trusted, or as it came. */
function requestError(server: Server, e: NodeJS.ErrnoException): Error {
  if (UNREACHABLE.test(e.code ?? '')) {
    return new ServerUnreachableError(`no server answers at ${server.base}: ${e.message}`);
  }
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME/.test(e.code ?? '')) {
    return new ServerError(
      0,
      'E_TLS',
      `the certificate of ${server.base} is not trusted (${e.code}: ${e.message}); ` +
        'give the CA that signed it with --ca FILE or PILOTFISH_CA',
    );
  }
  return e;
}

/** Starts a request with the token; resolves with the response's head. */
function start(
  server: Server,
  method: string,
  route: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
  timeoutMs: number,
): { req: http.ClientRequest; response: Promise<http.IncomingMessage>; done(): void } {
  const target = new URL(
    `${server.socketPath !== undefined ? 'http://localhost' : server.base}${route}`,
  );
  const options: https.RequestOptions = {
    method,
    headers: {
      authorization: `Bearer ${server.token}`,
      ...headers,
      ...(body !== undefined
        ? { 'content-type': 'application/json', 'content-length': String(body.length) }
        : {}),
    },
    // a connection of its own: nothing is left open when the command ends
    agent: false,
    ...(server.socketPath !== undefined ? { socketPath: server.socketPath } : {}),
    ...(server.ca !== undefined ? { ca: server.ca } : {}),
  };
  const req = (target.protocol === 'https:' ? https : http).request(target, options);
  const timer = setTimeout(() => {
    const e: NodeJS.ErrnoException = new Error(`no answer within ${timeoutMs / 1000} s`);
    e.code = 'E_NO_ANSWER';
    req.destroy(e);
  }, timeoutMs);
  const response = new Promise<http.IncomingMessage>((resolve, reject) => {
    req.on('response', resolve);
    req.on('error', (e: NodeJS.ErrnoException) => reject(requestError(server, e)));
  });
  req.end(body);
  return { req, response, done: () => clearTimeout(timer) };
}

async function bodyOf(res: http.IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of res) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/** The error a reply of status >= 300 carries: `{error: {code, message, issues?}}`. */
function errorOf(status: number, body: Buffer): ServerError {
  try {
    const e = (JSON.parse(body.toString('utf8')) as { error?: Record<string, unknown> }).error;
    if (typeof e?.code === 'string' && typeof e.message === 'string') {
      const issues = Array.isArray(e.issues) ? (e.issues as ValidationIssue[]) : [];
      return new ServerError(status, e.code, e.message, issues);
    }
  } catch {
    // not JSON: not our server's error, said as it came below
  }
  const text = body.toString('utf8').trim().slice(0, 200);
  return new ServerError(status, `E_HTTP_${status}`, text === '' ? `HTTP ${status}` : text);
}

/**
 * One request to the server, its whole answer within `timeoutMs`: the body as text. An answer
 * of status 300 or more is a ServerError; no answer a ServerUnreachableError.
 */
export async function requestText(
  server: Server,
  method: string,
  route: string,
  opts: { body?: unknown; timeoutMs?: number } = {},
): Promise<string> {
  const body = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
  const r = start(server, method, route, {}, body, opts.timeoutMs ?? REQUEST_MS);
  try {
    const res = await r.response;
    const got = await bodyOf(res).catch((e: NodeJS.ErrnoException) => {
      throw requestError(server, e);
    });
    if ((res.statusCode ?? 0) >= 300) throw errorOf(res.statusCode ?? 0, got);
    return got.toString('utf8');
  } finally {
    r.done();
    r.req.destroy();
  }
}

/** requestText of a JSON answer, parsed. */
export async function requestJson<T>(
  server: Server,
  method: string,
  route: string,
  opts: { body?: unknown; timeoutMs?: number } = {},
): Promise<T> {
  const text = await requestText(server, method, route, opts);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ServerError(200, 'E_BAD_REPLY', `${method} ${route}: an answer that is not JSON`);
  }
}

/** One server-sent event: its id (where it has one), type and data (as sent). */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/** Splits a server-sent event stream into events (comments and empty blocks left out). */
export class SseParser {
  private pending = '';
  private current: { id?: string; event?: string; data: string[] } = { data: [] };

  push(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    const lines = (this.pending + text).split('\n');
    this.pending = lines.pop()!;
    for (const raw of lines) {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (line === '') {
        const c = this.current;
        this.current = { data: [] };
        if (c.data.length === 0) continue;
        events.push({
          ...(c.id !== undefined ? { id: c.id } : {}),
          event: c.event ?? 'message',
          data: c.data.join('\n'),
        });
        continue;
      }
      if (line.startsWith(':')) continue;
      const at = line.indexOf(':');
      const field = at < 0 ? line : line.slice(0, at);
      const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
      if (field === 'id') this.current.id = value;
      else if (field === 'event') this.current.event = value;
      else if (field === 'data') this.current.data.push(value);
    }
    return events;
  }
}

/**
 * Reads a server-sent event stream of the API (`route`), from after `lastEventId`, handing each
 * event to `onEvent` (awaited: a slow reader holds the stream) until it returns true
 * ('stopped'), or the stream ends or drops ('closed': silent for `idleMs`, reset, ended). A
 * refusal before the stream starts is a ServerError; no answer a ServerUnreachableError.
 */
export async function readStream(
  server: Server,
  route: string,
  opts: {
    lastEventId?: string;
    idleMs?: number;
    /** Aborted: the stream is closed, and readStream resolves 'stopped'. */
    signal?: AbortSignal;
    onEvent(e: SseEvent): boolean | Promise<boolean>;
  },
): Promise<'stopped' | 'closed'> {
  if (aborted(opts.signal)) return 'stopped';
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
  const idleMs = opts.idleMs ?? STREAM_IDLE_MS;
  const r = start(server, 'GET', route, headers, undefined, Math.min(idleMs, REQUEST_MS));
  let idle: NodeJS.Timeout | undefined;
  const abort = (): void => void r.req.destroy();
  opts.signal?.addEventListener('abort', abort, { once: true });
  try {
    let res: http.IncomingMessage;
    try {
      res = await r.response;
    } catch (e) {
      if (aborted(opts.signal)) return 'stopped';
      throw e;
    }
    r.done();
    if (res.statusCode !== 200) throw errorOf(res.statusCode ?? 0, await bodyOf(res));
    const quiet = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => r.req.destroy(), idleMs);
    };
    quiet();
    const decoder = new StringDecoder('utf8');
    const parser = new SseParser();
    try {
      for await (const chunk of res) {
        quiet();
        for (const e of parser.push(decoder.write(chunk as Buffer))) {
          if (await opts.onEvent(e)) return 'stopped';
        }
      }
    } catch {
      // reset, or destroyed as silent: the caller takes it up again from its last id
    }
    return aborted(opts.signal) ? 'stopped' : 'closed';
  } finally {
    r.done();
    clearTimeout(idle);
    opts.signal?.removeEventListener('abort', abort);
    r.req.destroy();
  }
}

/** Whether `signal` has aborted (a function: TypeScript keeps no narrowing of it across awaits). */
function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** Reconnects a dropped stream at most this many times in a row, waiting longer each time. */
const RECONNECTS = 6;
const RECONNECT_MS = 250;

/**
 * Follows a stream of server-sent events until `onEvent` returns true (or `signal` aborts):
 * a stream that drops (reset, silent, ended early, the server away for a moment) is read again
 * from the last event id it gave (Last-Event-ID), so no event is missed or seen twice. Gives up
 * after RECONNECTS tries in a row that bring nothing new (ServerUnreachableError); a server
 * that does not answer the first request at all fails at once.
 */
export async function followStream(
  server: Server,
  route: string,
  onEvent: (e: SseEvent) => boolean | Promise<boolean>,
  signal?: AbortSignal,
): Promise<void> {
  let lastId: string | undefined;
  let opened = false;
  const seen = (e: SseEvent): boolean | Promise<boolean> => {
    if (e.id !== undefined) lastId = e.id;
    return onEvent(e);
  };
  for (let drops = 0; ;) {
    const before = lastId;
    try {
      const how = await readStream(server, route, {
        ...(lastId !== undefined ? { lastEventId: lastId } : {}),
        ...(signal !== undefined ? { signal } : {}),
        onEvent: seen,
      });
      if (how === 'stopped') return;
      opened = true;
    } catch (e) {
      // gone for now, after it answered: it may come back (a restart resumes its session)
      if (!(e instanceof ServerUnreachableError) || !opened) throw e;
    }
    drops = lastId !== before ? 1 : drops + 1;
    if (drops > RECONNECTS) {
      throw new ServerUnreachableError(
        `${server.base}${route}: the stream dropped, and ${RECONNECTS} tries to go on failed`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS * 2 ** (drops - 1)));
    if (aborted(signal)) return;
  }
}

/** The exit status for an error the server answered (docs/cli.md, "Talking to a server"). */
export function exitOfServerError(e: ServerError): number {
  return e.status === 503 || e.code === 'E_CLOSING' ? EXIT.notLive : EXIT.failed;
}

/** Issues a message shows at most; the rest are counted. */
const ISSUES_SHOWN = 20;

/** `pilotfish: CODE: message`, then a line per issue with its JSON path. */
export function reportServerError(e: ServerError, prefix = 'pilotfish'): void {
  let text = `${prefix}: ${e.code}: ${e.message}\n`;
  for (const i of e.issues.slice(0, ISSUES_SHOWN)) {
    text += `  ${i.in !== undefined ? `${i.in} ` : ''}${i.path} ${i.message}\n`;
  }
  if (e.issues.length > ISSUES_SHOWN) text += `  and ${e.issues.length - ISSUES_SHOWN} more\n`;
  process.stderr.write(text);
}

/**
 * Runs a command's work against a server: an error the server answers is its message and exit
 * 1 (4 when the service is closing), no answer exit 4 (not live), a UsageError exit 2.
 */
export async function serverErrors(work: () => Promise<number>): Promise<number> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof ServerError) {
      reportServerError(e);
      return exitOfServerError(e);
    }
    if (e instanceof ServerUnreachableError) {
      process.stderr.write(`pilotfish: ${e.message} (not live)\n`);
      return EXIT.notLive;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`pilotfish: ${e.message}\n`);
      return EXIT.usage;
    }
    throw e;
  }
}

/** A usage error of a command: its message, a hint, exit 2. */
export function usageFailure(cmd: string, message: string): number {
  process.stderr.write(`pilotfish ${cmd}: ${message}\n(try 'pilotfish ${cmd} --help')\n`);
  return EXIT.usage;
}

/** `/v1/tasks/<uid>` and the like: a uid as one path segment. */
export function taskRoute(uid: string, rest = ''): string {
  return `/v1/tasks/${encodeURIComponent(uid)}${rest}`;
}
