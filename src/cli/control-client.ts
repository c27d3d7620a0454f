import { connect } from 'node:net';
import * as path from 'node:path';
import {
  CONTROL_SOCKET,
  MAX_SOCKET_PATH_BYTES,
  type ControlReplyTo,
  type ControlRequest,
} from '../client/control/protocol';
import { UsageError, ValidationError } from '../errors';
import { parseControlReply } from '../lib/validate';

/** How long a live client has to answer; one that does not (stopped, hung) is not live. */
export const ANSWER_MS = 10_000;

/** Errors of a connect that mean no live client: no socket, or nobody listening on it. */
const NOT_LIVE = new Set(['ENOENT', 'ECONNREFUSED', 'ENOTSOCK', 'ECONNRESET', 'EPIPE']);

/**
 * Sends one request to the session in `dir` through its control socket; the reply is checked
 * against schemas/control-reply.schema.json (its result against the request's op) before it is
 * believed. Undefined when no client answers: the session has ended or its client died. A socket
 * this user may not open (another user's session) is a UsageError; a reply that is not JSON, or
 * does not match the schema, an Error naming the socket.
 */
export function ask<R extends ControlRequest>(
  dir: string,
  request: R,
  timeoutMs = ANSWER_MS,
): Promise<ControlReplyTo<R['op']> | undefined> {
  const file = path.join(dir, CONTROL_SOCKET);
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH_BYTES) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const socket = connect(file);
    let got = '';
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    function finish(reply: ControlReplyTo<R['op']> | undefined, error?: Error): void {
      clearTimeout(timer);
      socket.destroy();
      if (error !== undefined) reject(error);
      else resolve(reply);
    }
    socket.on('connect', () => socket.write(JSON.stringify(request) + '\n'));
    socket.on('data', (d: Buffer) => {
      got += d.toString('utf8');
      const at = got.indexOf('\n');
      if (at < 0) return;
      let input: unknown;
      try {
        input = JSON.parse(got.slice(0, at));
      } catch (e) {
        finish(undefined, new Error(`${file}: a reply that is not JSON (${(e as Error).message})`));
        return;
      }
      try {
        // checked against the result of this op: so it is the ControlReplyTo of it
        finish(parseControlReply(request.op, input) as ControlReplyTo<R['op']>);
      } catch (e) {
        if (!(e instanceof ValidationError)) throw e;
        finish(
          undefined,
          new Error(`${file}: a reply that does not match its schema (${e.message})`),
        );
      }
    });
    socket.on('end', () => finish(undefined)); // closed before it answered: closing down
    socket.on('error', (e: NodeJS.ErrnoException) => {
      if (NOT_LIVE.has(e.code ?? '')) finish(undefined);
      else if (e.code === 'EACCES') {
        finish(undefined, new UsageError(`${file}: permission denied (another user's session?)`));
      } else finish(undefined, e);
    });
  });
}
