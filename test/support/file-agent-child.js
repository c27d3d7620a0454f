// The agent's end of a file channel in a process of its own: `node file-agent-child.js
// PLAN.json` fetches plan.src to plan.local, sends plan.local to plan.back, and prints one
// JSON line: each transfer's result and milliseconds, and its own peak RSS (VmHWM, kB).
'use strict';
const fs = require('node:fs');
const { FileChannel } = require('../../dist/src/agent/file-channel');
const { silentLogger } = require('../../dist/src/lib/logger');

const plan = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));

function vmHWM() {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m === null ? undefined : Number(m[1]);
}

async function timed(fn) {
  const t0 = process.hrtime.bigint();
  const result = await fn();
  return { ...result, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
}

async function main() {
  const files = new FileChannel({
    address: plan.address,
    security: plan.curve,
    session: 's',
    pilot: 'p',
    log: silentLogger,
  });
  let progress = 0;
  files.onProgress(() => progress++);
  try {
    const fetch = await timed(() => files.fetch('t', plan.src, plan.local));
    fetch.vmHWMkB = vmHWM();
    const send = await timed(() => files.send('t', plan.local, plan.back));
    process.stdout.write(JSON.stringify({ fetch, send, progress, vmHWMkB: vmHWM() }) + '\n');
  } finally {
    await files.close();
  }
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ error: { code: e.code, message: e.message } }) + '\n');
  process.exit(1);
});
