import { afterAll, beforeAll, expect } from '@jest/globals';
import { openTcpSockets } from './open-sockets';

// Every integration test file must close the sockets it opens (bridges, queues, agents'
// connections): compared after the file with what was open before it.
let before: string[] = [];

beforeAll(() => {
  before = openTcpSockets();
});

afterAll(async () => {
  const deadline = Date.now() + 3_000;
  let now = openTcpSockets();
  // libzmq closes sockets on its I/O thread, a moment after close() returns
  while (now.length > before.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    now = openTcpSockets();
  }
  expect(now.filter((s) => !before.includes(s))).toEqual([]);
});
