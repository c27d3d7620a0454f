// The client's end of a file channel in a process of its own, so that a test can measure its
// memory (/proc/<pid>/status): `node file-server-child.js DIR READ WRITE` serves READ and
// accepts WRITE for task 't' of pilot 'p' of session 's', prints one JSON line
// {address, curve} (what an agent needs), and closes on SIGTERM.
'use strict';
const { FileServer } = require('../../dist/src/client/files/server');
const { SessionSecurity } = require('../../dist/src/client/pilots/session-security');
const { silentLogger } = require('../../dist/src/lib/logger');

const [dir, read, write] = process.argv.slice(2);

async function main() {
  const security = await SessionSecurity.open('s', dir, silentLogger);
  const curve = security.client(security.issue('p'));
  const server = new FileServer({ session: 's', log: silentLogger });
  const address = await server.listen('p', 'tcp://127.0.0.1:0', security.forPilot('p'));
  server.allow('p', 't', { read: [read], write: [write] });
  process.stdout.write(JSON.stringify({ address, curve }) + '\n');
  process.once('SIGTERM', () => {
    void server
      .close()
      .then(() => security.close())
      .then(() => process.exit(0));
  });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
