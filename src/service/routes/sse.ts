import type { FastifyReply } from 'fastify';

/** A comment line this often keeps proxies and clients from timing an idle stream out. */
const HEARTBEAT_MS = 15_000;

/** A server-sent event stream on a hijacked reply. */
export interface EventStream {
  /** Writes events (whole `id:/event:/data:` blocks); waits while the client is behind. */
  send(text: string): Promise<void>;
  /** The client has gone (or end() was called). */
  readonly closed: boolean;
  /** Called once the client has gone. */
  onClose(fn: () => void): void;
  end(): void;
}

/**
 * Takes the reply over for server-sent events: the head, a first comment, a heartbeat comment
 * every 15 s. A slow client holds its stream, not the server's memory: send() waits for it to
 * read what was written.
 */
export function openEventStream(reply: FastifyReply): EventStream {
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  raw.write(': pilotfish\n\n');
  let closed = false;
  const closers: (() => void)[] = [];
  const heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), HEARTBEAT_MS);
  const close = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    for (const fn of closers.splice(0)) fn();
  };
  raw.on('close', close);
  return {
    get closed() {
      return closed;
    },
    onClose: (fn) => (closed ? fn() : closers.push(fn)),
    send: async (text) => {
      if (closed || raw.write(text)) return;
      await new Promise<void>((resolve) => {
        raw.once('drain', resolve);
        closers.push(resolve);
      });
    },
    end: () => {
      close();
      raw.end();
    },
  };
}
