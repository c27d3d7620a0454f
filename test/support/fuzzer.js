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
const sent = { random: 0, raw: 0, shape: 0, truncated: 0, oversize: 0 };

// the socket type each port's bound socket pairs with and takes messages from (agentInput is a
// PUSH: nothing can send to it over ZeroMQ, so it gets the raw TCP kind only); an XSUB sends
// its messages to the XPUB of controlDown as subscriptions
const peerType = {
  managerOutput: zmq.Push,
  controlUp: zmq.Publisher,
  store: zmq.Dealer,
  controlDown: zmq.XSubscriber,
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

async function spread(kind, make) {
  process.stderr.write(`fuzz ${kind} start\n`);
  for (let i = 0; i < plan.perKind; i++) {
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

(async () => {
  const addresses = Object.values(plan.ports);
  const rawEach = Math.ceil(plan.perKind / addresses.length);
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
  for (let i = 0; i < plan.oversize; i++) {
    try {
      await sockets[i % sockets.length].send(big);
      sent.oversize++;
    } catch {
      // dropped
    }
  }
  process.stdout.write(JSON.stringify(sent) + '\n');
  for (const s of sockets) s.close();
  process.exit(0);
})();
