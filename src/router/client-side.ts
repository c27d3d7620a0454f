import type * as http from 'node:http';

// What the proxy needs of the client a request came from: its request's method and headers,
// and where its answer goes. Two kinds: the router's own server (front-server.ts, startRouter)
// and node:http's request and response (pilotfish serve, through Fastify).

/** Headers that belong to one hop of a connection, never forwarded (RFC 9110 7.6.1). */
export const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

export interface ClientSide {
  readonly method: string;
  /** The request's header fields, flat: name, value (names in any case). */
  readonly headers: readonly string[];
  readonly remoteAddress: string;
  /** The answer's head is set: an error can no longer be its status. */
  readonly headersSent: boolean;
  /**
   * Headers flat, name, value (those of one hop dropped: the connection's are its own); its
   * Content-Length kept means one write, not chunks. `checked`: names are lowercase tokens and
   * values free of control bytes already (a strict reader's).
   */
  writeHead(status: number, headers: string[], checked?: boolean): void;
  /** The head goes now, before any byte (an event stream's). */
  flushHeaders(): void;
  /** False: wait for onceDrain before the next. */
  write(chunk: Buffer): boolean;
  end(chunk?: Buffer | string): void;
  onceDrain(fn: () => void): void;
  /** Once: the answer is done, or the client went away before. */
  onceClose(fn: () => void): void;
  destroy(): void;
}

/** A node:http request and its response as a ClientSide. */
export function nodeClientSide(req: http.IncomingMessage, res: http.ServerResponse): ClientSide {
  return {
    method: req.method ?? 'GET',
    headers: req.rawHeaders,
    remoteAddress: req.socket.remoteAddress ?? '',
    get headersSent() {
      return res.headersSent;
    },
    writeHead: (status, headers) => {
      const kept: string[] = [];
      for (let i = 0; i + 1 < headers.length; i += 2) {
        if (!HOP.has(headers[i]!.toLowerCase())) kept.push(headers[i]!, headers[i + 1]!);
      }
      res.writeHead(status, kept);
    },
    flushHeaders: () => res.flushHeaders(),
    write: (chunk) => res.write(chunk),
    end: (chunk) => void (chunk === undefined ? res.end() : res.end(chunk)),
    onceDrain: (fn) => void res.once('drain', fn),
    onceClose: (fn) => void res.once('close', fn),
    destroy: () => void res.destroy(),
  };
}

/** The API's error shape, `{error: {code, message}}`, with its status. */
export function sendError(
  client: ClientSide,
  error: { status: number; code: string; message: string },
): void {
  sendJson(client, error.status, { error: { code: error.code, message: error.message } });
}

/** `value` as JSON with `status`, and `extra` headers (name, value, ...). */
export function sendJson(
  client: ClientSide,
  status: number,
  value: unknown,
  extra: string[] = [],
): void {
  const body = Buffer.from(JSON.stringify(value));
  client.writeHead(status, [
    ...extra,
    'content-type',
    'application/json',
    'content-length',
    String(body.length),
  ]);
  client.end(body);
}
