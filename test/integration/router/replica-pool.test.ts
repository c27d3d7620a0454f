import { afterEach, describe, expect, it } from '@jest/globals';
import * as http from 'node:http';
import * as net from 'node:net';
import { ReplicaPool, type ReplicaError } from '../../../src/router/replica-pool';

// The router's connections to a replica, against real servers: node:http (keep-alive,
// chunked streams) and raw sockets that misbehave the ways a dying or odd server does.

interface Got {
  status: number;
  headers: string[];
  body: string;
  chunks: number;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

async function listen(server: net.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(
    () =>
      new Promise<void>((r) => {
        (server as http.Server).closeAllConnections?.();
        server.close(() => r());
      }),
  );
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

function pool(endpoint: string): ReplicaPool {
  const p = new ReplicaPool(endpoint);
  closers.push(() => Promise.resolve(p.destroy()));
  return p;
}

function send(
  p: ReplicaPool,
  opts: {
    method?: string;
    path?: string;
    headers?: string;
    body?: string;
    onChunk?: () => void;
  } = {},
): Promise<Got> {
  return new Promise((resolve, reject) => {
    const got: Got = { status: 0, headers: [], body: '', chunks: 0 };
    p.send(
      opts.method ?? 'POST',
      opts.path ?? '/v1/x',
      opts.headers ?? '',
      Buffer.from(opts.body ?? ''),
      {
        head: (status, headers) => Object.assign(got, { status, headers }),
        body: (chunk, last) => {
          got.body += chunk.toString();
          if (chunk.length > 0) {
            got.chunks++;
            opts.onChunk?.();
          }
          if (last) resolve(got);
        },
        onError: (e) => reject(e),
      },
    );
  });
}

/** A raw server that answers each connection's first request with `answer` (then maybe more). */
async function raw(answer: (socket: net.Socket, request: string) => void): Promise<string> {
  const server = net.createServer((socket) => {
    let seen = '';
    socket.on('data', (d) => {
      seen += d.toString('latin1');
      if (seen.includes('\r\n\r\n')) answer(socket, seen);
    });
    socket.on('error', () => undefined);
  });
  return listen(server);
}

describe('ReplicaPool', () => {
  it('sends the request as given and reuses one keep-alive connection, one request at a time', async () => {
    const sockets = new Set<net.Socket>();
    const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] =
      [];
    const server = http.createServer((req, res) => {
      sockets.add(req.socket);
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json', 'x-n': String(seen.length) });
        res.end(JSON.stringify({ n: seen.length }));
      });
    });
    const endpoint = await listen(server);
    const p = pool(endpoint);
    for (let k = 1; k <= 5; k++) {
      const got = await send(p, {
        path: `/v1/x?k=${k}`,
        headers: 'X-Tag: t\r\n',
        body: `{"k":${k}}`,
      });
      expect([got.status, got.body]).toEqual([200, `{"n":${k}}`]);
      expect(got.headers).toEqual(expect.arrayContaining(['x-n', String(k)]));
    }
    expect(sockets.size).toBe(1);
    expect(p.size).toBe(1);
    expect(seen[4]).toMatchObject({
      method: 'POST',
      url: '/v1/x?k=5',
      body: '{"k":5}',
      headers: { host: endpoint.slice('http://'.length), 'x-tag': 't', 'content-length': '7' },
    });
    // at once: a connection each
    const all = await Promise.all([1, 2, 3, 4].map(() => send(p)));
    expect(all.map((g) => g.status)).toEqual([200, 200, 200, 200]);
    expect(sockets.size).toBe(4);
  });

  it('passes a chunked stream on as it comes, each piece when the server sends it', async () => {
    let next: (() => void) | undefined;
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      next = () => {
        n++;
        if (n <= 3) res.write(`data: ${n}\n\n`);
        else res.end('data: [DONE]\n\n');
      };
      next();
    });
    const p = pool(await listen(server));
    // the next piece is written only once the last one came: they cannot arrive together
    const got = await send(p, { onChunk: () => next?.() });
    expect(got.body).toBe('data: 1\n\ndata: 2\n\ndata: 3\n\ndata: [DONE]\n\n');
    expect(got.chunks).toBe(4);
  });

  it('says a request never reached a replica when nothing listens, and did when it died under it', async () => {
    const closed = net.createServer();
    const endpoint = await listen(closed);
    await new Promise<void>((r) => closed.close(() => r()));
    const refused = (await send(pool(endpoint)).catch((e: ReplicaError) => e)) as ReplicaError;
    expect([refused.reached, refused.code]).toEqual([false, 'ECONNREFUSED']);

    const dies = await raw((socket) =>
      socket.end('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc'),
    );
    const cut = (await send(pool(dies)).catch((e: ReplicaError) => e)) as ReplicaError;
    expect(cut.reached).toBe(true);
    expect(cut.message).toMatch(/in the middle of its answer/);

    const silent = await raw((socket) => socket.destroy());
    const gone = (await send(pool(silent)).catch((e: ReplicaError) => e)) as ReplicaError;
    expect(gone.reached).toBe(true);
  });

  it('does not reuse a connection after an answer it cannot trust', async () => {
    let connections = 0;
    const server = net.createServer((socket) => {
      connections++;
      socket.on('data', () => {
        // one byte more than the length says: the connection is spoiled
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokX');
      });
      socket.on('error', () => undefined);
    });
    const p = pool(await listen(server));
    expect((await send(p)).body).toBe('ok');
    expect((await send(p)).body).toBe('ok');
    expect(connections).toBe(2);
    const bad = await raw((socket) =>
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n'),
    );
    const e = (await send(pool(bad)).catch((x: ReplicaError) => x)) as ReplicaError;
    expect([e.code, e.reached]).toEqual(['E_FRAMING', true]);
    expect(e.message).toMatch(/both Content-Length and Transfer-Encoding/);
  });

  it("closes idle connections before the replica's keep-alive timeout, and reads to the close", async () => {
    let connections = 0;
    const server = net.createServer((socket) => {
      connections++;
      socket.on('data', () =>
        socket.write('HTTP/1.1 200 OK\r\nkeep-alive: timeout=1\r\ncontent-length: 1\r\n\r\nk'),
      );
      socket.on('error', () => undefined);
    });
    const p = pool(await listen(server));
    await send(p);
    await send(p);
    // a second of idle allowed, less the margin: none kept
    expect(connections).toBe(2);
    const toClose = await raw((socket) => socket.end('HTTP/1.1 200 OK\r\n\r\nuntil the end'));
    expect((await send(pool(toClose))).body).toBe('until the end');
  });

  it('an abort closes the connection under the request; a destroy fails what is under way', async () => {
    const ended: string[] = [];
    let bothEnded: () => void;
    const both = new Promise<void>((r) => (bothEnded = r));
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      req.socket.once('close', () => {
        if (ended.push(req.url!) === 2) bothEnded();
      });
    });
    const p = pool(await listen(server));
    const first = await new Promise<void>((resolve) => {
      const x = p.send('POST', '/a', '', Buffer.alloc(0), {
        head: () => undefined,
        body: () => {
          x.abort();
          resolve();
        },
        onError: () => undefined,
      });
    });
    expect(first).toBeUndefined();
    const failed = new Promise<ReplicaError>((resolve) => {
      p.send('POST', '/b', '', Buffer.alloc(0), {
        head: () => undefined,
        body: () => p.destroy(),
        onError: resolve,
      });
    });
    expect((await failed).reached).toBe(true);
    await both;
    expect(ended.sort()).toEqual(['/a', '/b']);
  });
});
