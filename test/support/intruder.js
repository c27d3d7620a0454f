/* eslint-disable */
// An intruder: another Unix user on the same machine who knows a session's ports (from
// /proc/net/tcp, world-readable) and even its public server key. Run by the intruder test as
// that user: `node intruder.js <plan.json>`. It tries every attack the trust issue measured
// and prints one JSON line of what it got: messages received, sends that went out, file reads.
'use strict';
const fs = require('node:fs');
const net = require('node:net');
const zmq = require('zeromq');
const { encode } = require('msgpackr');

const plan = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const LISTEN_MS = plan.listenMs;
const got = { received: [], sent: 0, rawMax: 0, files: {} };
const own = zmq.curveKeyPair();
// NULL (no security at all), and CURVE with our own key and the session's real public key
const mechanisms = [
  ['null', {}],
  [
    'curve',
    {
      curveServerKey: plan.serverKey,
      curvePublicKey: own.publicKey,
      curveSecretKey: own.secretKey,
    },
  ],
];

const forgedTask = (uid) => ({
  uid,
  attempt: 1,
  state: 'AGENT_STAGING_INPUT_PENDING',
  session: plan.session,
  pilot: plan.pilots[0],
  description: { executable: '/bin/sh', arguments: ['-c', `id > ${plan.marker}`] },
});
const forgedNotes = plan.victims.flatMap((uid) => [
  {
    kind: 'task',
    uid,
    attempt: 1,
    state: 'DONE',
    ts: Date.now(),
    component: 'x',
    detail: { stdout: 'forged' },
  },
  { kind: 'task', uid, attempt: 1, state: 'FAILED', ts: Date.now(), component: 'x' },
]);
const forgedControl = [
  { type: 'cancel_tasks', session: plan.session, uids: plan.victims },
  ...plan.pilots.map((pilot) => ({
    type: 'shutdown_agent',
    session: plan.session,
    pilot,
    final: 'CANCELED',
    message: 'owned',
  })),
  ...plan.pilots.map((pilot) => ({
    type: 'agent_ready',
    session: plan.session,
    pilot,
    nodes: [{ name: 'x', cores: 0, gpus: 0 }],
  })),
  ...plan.pilots.map((pilot) => ({
    type: 'agent_final',
    session: plan.session,
    pilot,
    final: 'FAILED',
    message: 'owned',
  })),
];

async function receiveFor(sock, what) {
  const stop = setTimeout(() => sock.close(), LISTEN_MS);
  try {
    for await (const frames of sock)
      got.received.push({ what, bytes: frames.reduce((n, f) => n + f.length, 0) });
  } catch {
    // closed
  }
  clearTimeout(stop);
}

async function sendAll(sock, messages) {
  for (const m of messages) {
    const ok = await Promise.race([
      sock.send(m).then(
        () => true,
        () => false,
      ),
      new Promise((r) => setTimeout(() => r(false), 300)),
    ]);
    if (ok) got.sent++;
  }
}

async function attackPort(address, opts) {
  const base = { linger: 0, ...opts };
  const pull = new zmq.Pull(base);
  pull.connect(address);
  const sub = new zmq.Subscriber(base);
  sub.connect(address);
  sub.subscribe();
  const dealer = new zmq.Dealer(base);
  dealer.connect(address);
  const push = new zmq.Push({ ...base, sendTimeout: 300 });
  push.connect(address);
  const pub = new zmq.Publisher(base);
  pub.connect(address);
  const listening = [
    receiveFor(pull, `pull ${address}`),
    receiveFor(sub, `sub ${address}`),
    receiveFor(dealer, `dealer ${address}`),
  ];
  await sendAll(push, [
    encode([forgedTask('intruder.0'), forgedTask('intruder.1')]),
    encode(forgedNotes),
  ]);
  await sendAll(
    pub,
    forgedControl.map((m) => encode(m)),
  );
  await sendAll(dealer, [
    encode({
      batch: 'evil',
      session: plan.session,
      pilot: plan.pilots[0],
      notifications: forgedNotes,
    }),
  ]);
  await Promise.all(listening);
  for (const s of [push, pub]) s.close();
}

function raw(address) {
  const [, host, port] = /^tcp:\/\/(.+):(\d+)$/.exec(address);
  return new Promise((resolve) => {
    const c = net.connect(Number(port), host, () => {
      c.write(Buffer.from([0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 1, 0])); // ZMTP 1.0-ish greeting
      c.write(Buffer.alloc(4096, 0xc1));
    });
    let bytes = 0;
    c.on('data', (d) => {
      bytes += d.length;
      got.rawMax = Math.max(got.rawMax, bytes);
    });
    c.on('error', () => resolve());
    c.on('close', () => resolve());
    setTimeout(() => {
      c.destroy();
      resolve();
    }, LISTEN_MS);
  });
}

(async () => {
  for (const f of plan.files) {
    try {
      fs.readFileSync(f);
      got.files[f] = 'READ';
    } catch (e) {
      got.files[f] = e.code;
    }
  }
  await Promise.all(
    plan.addresses.flatMap((a) => [raw(a), ...mechanisms.map(([, o]) => attackPort(a, o))]),
  );
  process.stdout.write(JSON.stringify(got) + '\n');
  process.exit(0);
})();
