import { chmodSync, lstatSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import * as path from 'node:path';
import { errorMeta } from '../../errors';
import { PRIVATE_FILE } from '../../lib/private-files';
import type { ControlContext } from './context';
import { dispatchControl } from './dispatch';
import { answers } from './liveness';
import {
  CONTROL_SOCKET,
  MAX_REQUEST_BYTES,
  MAX_SOCKET_PATH_BYTES,
  type ControlReply,
} from './protocol';

/** Connections served at once: `pilotfish` commands are short; more wait in the backlog. */
const MAX_CONNECTIONS = 32;
/** Requests of one connection waiting for their answer before it is read no further. */
const MAX_PENDING = 16;

/**
 * The session's control socket (see protocol.ts), for the commands of `pilotfish`: the framing
 * only (a JSON request per line, a line's size, replies in request order, a peer that does not
 * read), each request answered by the handler table through dispatchControl. A bad request gets
 * an error reply naming what is wrong; nothing a peer sends can throw into the session.
 */
export class ControlServer {
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly ctx: ControlContext,
    private readonly server: Server,
    readonly file: string,
  ) {}

  /**
   * Listens at `<dir>/control.sock`, replacing a socket a crashed client left. Undefined (and
   * a warning in the log) when it cannot: the session goes on without one.
   */
  static async listen(ctx: ControlContext): Promise<ControlServer | undefined> {
    const rt = ctx.runtime;
    const file = path.join(rt.dir, CONTROL_SOCKET);
    if (Buffer.byteLength(file) > MAX_SOCKET_PATH_BYTES) {
      rt.log.warn('no control socket: its path is too long for a Unix socket', { file });
      return undefined;
    }
    try {
      if (lstatSync(file, { throwIfNoEntry: false })?.isSocket() === true) {
        // a live client of the same session keeps its socket; a dead one's is replaced
        if (await answers(file)) {
          rt.log.warn('no control socket: another client of this session holds it', { file });
          return undefined;
        }
        rmSync(file);
      }
      const server = createServer();
      server.maxConnections = MAX_CONNECTIONS;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(file, () => {
          server.off('error', reject);
          resolve();
        });
      });
      // the session directory (0700) already keeps others out; the socket's mode says so too
      chmodSync(file, PRIVATE_FILE);
      const control = new ControlServer(ctx, server, file);
      server.on('connection', (s) => control.serve(s));
      server.on('error', (e) => rt.log.warn('control socket error', errorMeta(e)));
      return control;
    } catch (e) {
      rt.log.warn('no control socket', { file, ...errorMeta(e) });
      return undefined;
    }
  }

  /** Stops listening, ends every connection and removes the socket file. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.file, { force: true });
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    let buffered: Buffer[] = [];
    let size = 0;
    let pending = 0;
    let chain = Promise.resolve();
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy()); // a peer that went away: nothing to tell
    socket.on('data', (chunk: Buffer) => {
      if (size < 0) return; // refused: what else it sends is dropped
      let at = chunk.indexOf(0x0a);
      while (at >= 0) {
        const line = Buffer.concat([...buffered, chunk.subarray(0, at)]).toString('utf8');
        buffered = [];
        size = 0;
        chunk = chunk.subarray(at + 1);
        at = chunk.indexOf(0x0a);
        if (line.trim() === '') continue;
        // one at a time per connection: replies come back in request order; a peer that sends
        // faster than it reads is read no further until its backlog is answered
        if (++pending === MAX_PENDING) socket.pause();
        chain = chain.then(async () => {
          write(socket, await this.answer(line));
          if (--pending === MAX_PENDING - 1) socket.resume();
        });
      }
      buffered.push(chunk);
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        buffered = [];
        size = -1;
        const message = `a request line is longer than ${MAX_REQUEST_BYTES} bytes`;
        chain = chain.then(() => {
          write(socket, { ok: false, error: { code: 'E_TOO_LARGE', message } });
          socket.end();
        });
      }
    });
  }

  /** The reply to one request line; never rejects. */
  private answer(line: string): Promise<ControlReply> {
    let input: unknown;
    try {
      input = JSON.parse(line);
    } catch (e) {
      const error = { code: 'E_BAD_JSON', message: (e as Error).message };
      return Promise.resolve({ ok: false, error });
    }
    return dispatchControl(this.ctx, input);
  }
}

function write(socket: Socket, reply: ControlReply): void {
  if (!socket.destroyed && socket.writable) socket.write(JSON.stringify(reply) + '\n');
}
