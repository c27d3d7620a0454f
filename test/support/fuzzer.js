// A broken peer for the wire fuzz test: `node fuzzer.js <plan.json>` sends `perKind` malformed
// messages of each kind, spread over every port of the plan, and prints what it sent as one
// JSON line. It holds a pilot's keys (an admitted agent gone mad), so its messages get past
// CurveZMQ to the parsers; the raw TCP kind has no keys and never gets past the handshake.
'use strict';
const fs = require('node:fs');
const net = require('node:net');
const zmq = require('zeromq');
const { encode } = require('msgpackr');

const plan = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
let seed = plan.seed >>> 0;
const rnd = () => (seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32;
const bytes = (n) => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
const sent = { random: 0, raw: 0, shape: 0, truncated: 0, oversize: 0, oversizeHeaders: 0 };

// the socket type each port's bound socket pairs with and takes messages from (agentInput is a
// PUSH: nothing can send to it over ZeroMQ, so it gets the raw TCP kind only); an XSUB sends
// its messages to the XPUB of controlDown as subscriptions
const peerType = {
  managerOutput: zmq.Push,
  controlUp: zmq.Publisher,
  store: zmq.Dealer,
  files: zmq.Dealer,
  controlDown: zmq.XSubscriber,
};
/** The socket type each port pairs with, as a ZMTP READY names it. */
const PAIRS = {
  agentInput: 'PULL',
  managerOutput: 'PUSH',
  controlUp: 'PUB',
  store: 'DEALER',
  files: 'DEALER',
  controlDown: 'SUB',
};
const opts = { linger: 0, sendTimeout: 2000, ...plan.curve };
const sockets = Object.entries(plan.ports)
  .filter(([kind]) => peerType[kind] !== undefined)
  .map(([kind, address]) => {
    const s = new peerType[kind](opts);
    s.connect(address);
    return s;
  });
const wellFormed = [
  [
    {
      uid: 'x',
      attempt: 1,
      state: 'TMGR_STAGING_OUTPUT_PENDING',
      session: plan.session,
      description: { executable: '/bin/true' },
    },
  ],
  { type: 'agent_heartbeat', session: plan.session, pilot: plan.pilot },
  {
    batch: 'b',
    session: plan.session,
    pilot: plan.pilot,
    notifications: [{ kind: 'task', uid: 'x', attempt: 1, state: 'DONE', ts: 1, component: 'x' }],
  },
];
const shapes = [
  () => encode(Math.floor(rnd() * 1e9)),
  () => encode({ type: 'agent_ready', session: plan.session, pilot: plan.pilot, nodes: 'all' }),
  () => encode([{ uid: 42 }, null, 'task']),
  () => encode({ batch: 7, notifications: {} }),
  () => encode([{ ...wellFormed[0][0], attempt: -1, state: 'NOPE' }]),
  () => encode('x'.repeat(Math.floor(rnd() * 1000))),
];

const only = process.env.PF_FUZZ_KINDS?.split(',');
const wanted = (kind) => only === undefined || only.includes(kind);

async function spread(kind, make) {
  if (!wanted(kind)) return;
  process.stderr.write(`fuzz ${kind} start\n`);
  // perKind at each port
  for (let i = 0; i < plan.perKind * sockets.length; i++) {
    const s = sockets[i % sockets.length];
    try {
      await s.send(make(i));
      sent[kind]++;
    } catch {
      // a send that timed out: the peer dropped us (oversize) and is reconnecting
    }
  }
  process.stderr.write(`fuzz ${kind} done\n`);
}

function raw(address, count) {
  if (!wanted('raw')) return Promise.resolve();
  const [, host, port] = /^tcp:\/\/(.+):(\d+)$/.exec(address);
  return new Promise((resolve) => {
    let left = count;
    const next = () => {
      if (left <= 0) {
        process.stderr.write(`fuzz raw ${address} done\n`);
        return resolve();
      }
      const c = net.connect(Number(port), host);
      c.on('connect', () => {
        // one connection carries garbage until the server drops it
        while (left > 0 && c.write(bytes(64))) {
          left--;
          sent.raw++;
          if (left % 100 === 0) break;
        }
        c.end(() => c.destroy()); // a server that waits for more would never close
      });
      c.on('error', () => undefined);
      c.on('close', next);
    };
    next();
  });
}

/**
 * ZMTP 3.0 by hand, NULL mechanism (an insecure session's ports take it): greeting, READY with
 * the socket type the port pairs with, then the header of one frame of `size` bytes (long
 * form) and only a few of them. libzmq drops the connection on the header; no body is sent, so
 * thousands cost nothing to send.
 */
function oversizeHeader(address, socketType, size) {
  const [, host, port] = /^tcp:\/\/(.+):(\d+)$/.exec(address);
  const greeting = Buffer.alloc(64);
  greeting[0] = 0xff;
  greeting[9] = 0x7f;
  greeting[10] = 3; // version 3.0
  greeting.write('NULL', 12);
  const prop = (name, value) =>
    Buffer.concat([
      Buffer.from([name.length]),
      Buffer.from(name),
      u32(value.length),
      Buffer.from(value),
    ]);
  const body = Buffer.concat([
    Buffer.from([5]),
    Buffer.from('READY'),
    prop('Socket-Type', socketType),
  ]);
  const ready = Buffer.concat([Buffer.from([0x04, body.length]), body]);
  const header = Buffer.alloc(9);
  header[0] = 0x02; // a message frame, long size
  header.writeBigUInt64BE(BigInt(size), 1);
  return new Promise((resolve) => {
    const c = net.connect(Number(port), host, () => {
      c.end(Buffer.concat([greeting, ready, header, bytes(16)]), () => c.destroy());
      sent.oversizeHeaders++;
    });
    c.on('error', () => undefined);
    c.on('close', resolve);
  });
}

function u32(n) {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

(async () => {
  const addresses = Object.values(plan.ports);
  const rawEach = plan.perKind;
  // zeromq.js takes one send at a time per socket: the kinds that share sockets go in turn
  const messages = (async () => {
    await spread('random', () => bytes(1 + Math.floor(rnd() * 512)));
    await spread('shape', (i) => shapes[i % shapes.length]());
    await spread('truncated', (i) => {
      const full = encode(wellFormed[i % wellFormed.length]);
      return full.subarray(0, Math.max(1, Math.floor(rnd() * full.length)));
    });
  })();
  await Promise.all([messages, ...addresses.map((a) => raw(a, rawEach))]);
  // frames over the 64 MiB limit: libzmq drops the connection on the size header, before
  // holding the body (a few: each costs the sender a 64 MiB encryption)
  const big = Buffer.alloc(64 * 2 ** 20 + 1, 0xc1);
  for (let i = 0; wanted('oversize') && i < plan.oversize; i++) {
    try {
      await sockets[i % sockets.length].send(big);
      sent.oversize++;
    } catch {
      // dropped
    }
  }
  // the same limit, by header alone, at each port of the insecure session: 10 at a time
  const plain = wanted('oversize') ? Object.entries(plan.plainPorts ?? {}) : [];
  for (let i = 0; plain.length > 0 && i < plan.oversizeHeaders; i += 10) {
    await Promise.all(
      Array.from({ length: 10 }, (_, j) => {
        const [kind, address] = plain[(i + j) % plain.length];
        return oversizeHeader(address, PAIRS[kind], 64 * 2 ** 20 + 1);
      }),
    );
  }
  process.stdout.write(JSON.stringify(sent) + '\n');
  for (const s of sockets) s.close();
  process.exit(0);
})();
