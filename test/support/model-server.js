'use strict';
// A stand-in model server, run as a service task: it "loads" for --load-ms before it listens
// on $PF_PORT, answers GET /health, and serves OpenAI-style completions, streamed token by
// token (--token-ms apart) when the body says `stream: true`. Each answer names the model,
// this process, and the order in which requests reached it (`served`), and echoes `x-tag`.
// GET /cancelled answers once a stream was cut off by its client (at once if one was).
const http = require('node:http');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : process.argv[i + 1];
};
const NAME = arg('name', 'model');
const LOAD_MS = Number(arg('load-ms', '0'));
const TOKEN_MS = Number(arg('token-ms', '0'));
let served = 0;
/** Streams whose client went away before their end, and who waits to hear of one. */
let cancelled = 0;
const cancelWaiters = [];
/** From this process's start to its listening (node's own start included), in ms. */
let loadedMs;

function reply(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/health') return reply(res, 200, { ok: true });
  if (req.method === 'GET' && req.url === '/pid') return reply(res, 200, { pid: process.pid });
  if (req.method === 'GET' && req.url === '/cancelled') {
    if (cancelled > 0) return reply(res, 200, { cancelled });
    return void cancelWaiters.push(res);
  }
  const parts = [];
  req.on('data', (d) => parts.push(d));
  req.on('end', () => {
    const n = ++served;
    let body;
    try {
      body = JSON.parse(Buffer.concat(parts).toString() || '{}');
    } catch {
      return reply(res, 400, { error: { message: 'not JSON' } });
    }
    const tag = req.headers['x-tag'];
    const job = process.env.SLURM_JOB_ID;
    // the node it runs on: Slurm's name for it inside a job step, else the host's
    const node = process.env.SLURMD_NODENAME ?? require('node:os').hostname();
    const meta = {
      model: NAME,
      pid: process.pid,
      served: n,
      tag,
      path: req.url,
      loadedMs,
      job,
      node,
    };
    if (req.url === '/v1/embeddings') {
      return reply(res, 200, { object: 'list', data: [{ embedding: [0.5, 0.25] }], ...meta });
    }
    const tokens = Number(body.max_tokens ?? 3);
    if (body.stream !== true) {
      const answer = () => {
        const content = Array.from({ length: tokens }, (_, i) => `t${i}`).join(' ');
        reply(res, 200, {
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content } }],
          ...meta,
        });
      };
      // no time to take: at once (a timer of 0 waits ~1 ms)
      if (tokens * TOKEN_MS === 0) answer();
      else setTimeout(answer, tokens * TOKEN_MS);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let i = 0;
    let timer;
    res.once('close', () => {
      if (res.writableFinished) return;
      clearTimeout(timer);
      cancelled++;
      for (const w of cancelWaiters.splice(0)) reply(w, 200, { cancelled });
    });
    const next = () => {
      if (i === tokens) {
        res.end('data: [DONE]\n\n');
        return;
      }
      const chunk = {
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta: { content: `t${i}` } }],
        ...meta,
      };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      i++;
      timer = setTimeout(next, TOKEN_MS);
    };
    next();
  });
});

setTimeout(() => {
  server.listen(Number(process.env.PF_PORT), '127.0.0.1', () => {
    loadedMs = process.uptime() * 1000;
    console.log(`${NAME} loaded`);
  });
}, LOAD_MS);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
