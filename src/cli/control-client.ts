import { connect } from 'node:net';
import * as path from 'node:path';
import { UsageError } from '../errors';
import type { ControlRequest } from '../generated';
import {
  CONTROL_SOCKET,
  MAX_SOCKET_PATH_BYTES,
  type ControlReply,
} from '../client/control/protocol';

/** How long a live client has to answer; one that does not (stopped, hung) is not live. */
export const ANSWER_MS = 10_000;

/** Errors of a connect that mean no live client: no socket, or nobody listening on it. */
const NOT_LIVE = new Set(['ENOENT', 'ECONNREFUSED', 'ENOTSOCK', 'ECONNRESET', 'EPIPE']);

/**
 * Sends one request to the session in `dir` through its control socket. Undefined when no client
 * answers: the session has ended or its client died. A socket this user may not open (another
 * user's session) is a UsageError.
 */
export function ask<T>(
  dir: string,
  request: ControlRequest,
  timeoutMs = ANSWER_MS,
): Promise<ControlReply<T> | undefined> {
  const file = path.join(dir, CONTROL_SOCKET);
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH_BYTES) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const socket = connect(file);
    let got = '';
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    function finish(reply: ControlReply<T> | undefined, error?: Error): void {
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
      try {
        finish(JSON.parse(got.slice(0, at)) as ControlReply<T>);
      } catch (e) {
        finish(undefined, new Error(`${file}: a reply that is not JSON (${(e as Error).message})`));
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
