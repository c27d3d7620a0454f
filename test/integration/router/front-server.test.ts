import { afterEach, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import {
  createFrontServer,
  type FrontReply,
  type FrontRequest,
  type FrontServerOptions,
} from '../../../src/router/front-server';

// The router's own HTTP/1.1 server against real clients: fetch, curl and Debian's python3,
// and raw sockets for what they would not send (pipelining, HTTP/1.0, malformed requests,
// a head that never ends).

const run = promisify(execFile);
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

type Handler = (req: FrontRequest, reply: FrontReply) => void;

/** Echoes method, target and body; `/chunks` answers in pieces without a length. */
const echo: Handler = (req, reply) => {
  const body = JSON.stringify({ method: req.method, target: req.target, size: req.body.length });
  if (req.target === '/chunks') {
    reply.writeHead(200, ['content-type', 'text/plain']);
    reply.write(Buffer.from('one '));
    reply.write(Buffer.from('two '));
    return reply.end('three');
  }
  reply.writeHead(200, ['content-type', 'application/json', 'content-length', String(body.length)]);
  reply.end(body);
};

async function serve(handle: Handler = echo, opts: FrontServerOptions = {}): Promise<string> {
  const front = createFrontServer(handle, opts);
  await new Promise<void>((r) => front.server.listen(0, '127.0.0.1', r));
  closers.push(() => front.close());
  return `http://127.0.0.1:${(front.server.address() as net.AddressInfo).port}`;
}

/** Sends `bytes` on a new connection; everything that comes back until the server closes. */
function exchange(url: string, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(new URL(url).port), '127.0.0.1');
    let got = '';
    s.on('data', (d) => (got += d.toString('latin1')));
    s.once('error', reject);
    s.once('close', () => resolve(got));
    s.end(bytes);
  });
}

describe('the front server', () => {
  it('serves fetch over keep-alive, with a length or in chunks', async () => {
    const url = await serve();
    for (let k = 0; k < 3; k++) {
      const res = await fetch(`${url}/v1/x?k=${k}`, { method: 'POST', body: 'abc' });
      expect(res.headers.get('connection')).toBe('keep-alive');
      expect(await res.json()).toEqual({ method: 'POST', target: `/v1/x?k=${k}`, size: 3 });
    }
    const chunks = await fetch(`${url}/chunks`);
    expect(chunks.headers.get('transfer-encoding')).toBe('chunked');
    expect(await chunks.text()).toBe('one two three');
  });

  it('takes what curl sends: Expect: 100-continue for a large body, a chunked body', async () => {
    const url = await serve();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-front-'));
    closers.push(() => Promise.resolve(fs.rmSync(dir, { recursive: true, force: true })));
    const file = path.join(dir, 'body');
    fs.writeFileSync(file, Buffer.alloc(3 * 1024 * 1024, 'x'));
    const big = await run('curl', ['-sS', '-v', '--data-binary', `@${file}`, `${url}/big`]);
    expect(big.stderr).toMatch(/Expect: 100-continue/);
    expect(JSON.parse(big.stdout)).toMatchObject({ size: 3 * 1024 * 1024 });
    const chunked = await run('curl', [
      '-sS',
      '-H',
      'Transfer-Encoding: chunked',
      '--data-binary',
      `@${file}`,
      `${url}/chunked`,
    ]);
    expect(JSON.parse(chunked.stdout)).toMatchObject({ target: '/chunked', size: 3 * 1024 * 1024 });
  });

  it("answers Debian's python3 http.client", async () => {
    const url = await serve();
    const port = new URL(url).port;
    const script = [
      'import http.client, json',
      `c = http.client.HTTPConnection("127.0.0.1", ${port})`,
      'out = []',
      'for p in ["/a", "/chunks", "/b"]:',
      '    c.request("POST", p, body=b"12345", headers={"content-type": "text/plain"})',
      '    r = c.getresponse()',
      '    out.append([r.status, r.read().decode()])',
      'print(json.dumps(out))',
    ].join('\n');
    const { stdout } = await run('python3', ['-c', script]);
    expect(JSON.parse(stdout)).toEqual([
      [200, JSON.stringify({ method: 'POST', target: '/a', size: 5 })],
      [200, 'one two three'],
      [200, JSON.stringify({ method: 'POST', target: '/b', size: 5 })],
    ]);
  });

  it('answers pipelined requests in order, and an HTTP/1.0 client without chunks', async () => {
    const url = await serve();
    const two = await exchange(
      url,
      'GET /1 HTTP/1.1\r\nhost: h\r\n\r\nGET /2 HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n',
    );
    expect(two.indexOf('"target":"/1"')).toBeGreaterThan(0);
    expect(two.indexOf('"target":"/2"')).toBeGreaterThan(two.indexOf('"target":"/1"'));
    const old = await exchange(url, 'GET /chunks HTTP/1.0\r\n\r\n');
    expect(old).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(old).toMatch(/connection: close\r\n/);
    expect(old).not.toMatch(/transfer-encoding/);
    expect(old.endsWith('\r\n\r\none two three')).toBe(true);
    const head = await exchange(url, 'HEAD /x HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n');
    expect(head).toMatch(/content-length: \d+\r\n/);
    expect(head.endsWith('\r\n\r\n')).toBe(true);
  });

  it('refuses a malformed request or a body too large with a reason, and closes', async () => {
    const url = await serve(echo, { bodyLimitBytes: 1024 });
    const smuggled = await exchange(
      url,
      'POST / HTTP/1.1\r\nhost: h\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\nGET /evil HTTP/1.1\r\nhost: h\r\n\r\n',
    );
    expect(smuggled).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(smuggled).toMatch(/connection: close/);
    expect(smuggled).toMatch(/both Content-Length and Transfer-Encoding/);
    expect(smuggled).not.toMatch(/evil/);
    const declared = await exchange(
      url,
      'POST / HTTP/1.1\r\nhost: h\r\ncontent-length: 5000\r\n\r\n',
    );
    expect(declared).toMatch(/^HTTP\/1\.1 413 Payload Too Large\r\n[\s\S]*E_TOO_LARGE/);
    const chunks = `POST / HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\n\r\n${'200\r\n'.concat('y'.repeat(512), '\r\n').repeat(3)}0\r\n\r\n`;
    expect(await exchange(url, chunks)).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('cuts a head that does not come in time (408) and an idle connection', async () => {
    const url = await serve(echo, { headersTimeoutMs: 300, keepAliveMs: 300 });
    const port = Number(new URL(url).port);
    const slow = net.connect(port, '127.0.0.1');
    let got = '';
    slow.on('data', (d) => (got += d.toString()));
    slow.write('GET / HTTP/1.1\r\nhost: h\r\n');
    await new Promise((r) => slow.once('close', r));
    expect(got).toMatch(/^HTTP\/1\.1 408 /);
    const idle = net.connect(port, '127.0.0.1');
    idle.resume();
    idle.write('GET / HTTP/1.1\r\nhost: h\r\n\r\n');
    await new Promise((r) => idle.once('close', r));
  });

  it('tells a handler when its client goes away, and writes no header it was given with a CR or LF', async () => {
    let gone: () => void;
    const wentAway = new Promise<void>((r) => (gone = r));
    let handled: () => void;
    const inHandler = new Promise<void>((r) => (handled = r));
    const thrown: string[] = [];
    const url = await serve((_req, reply) => {
      handled();
      try {
        reply.writeHead(200, ['x-bad', 'a\r\nset-cookie: evil']);
      } catch (e) {
        thrown.push((e as Error).message);
      }
      reply.onceClose(gone);
    });
    const s = net.connect(Number(new URL(url).port), '127.0.0.1');
    s.write('GET / HTTP/1.1\r\nhost: h\r\n\r\n');
    await inHandler;
    s.destroy();
    await wentAway;
    expect(thrown).toEqual([expect.stringMatching(/x-bad/)]);
  });
});
