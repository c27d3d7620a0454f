// Fails the run when a process started by the tests is still alive after all tests ended.
const fs = require('node:fs');
const { leakedProcesses } = require('./leaks');

module.exports = async function globalTeardown() {
  const mark = process.env.PILOTFISH_TEST_MARK;
  if (!mark) return;
  const deadline = Date.now() + 5_000;
  let leaks = leakedProcesses(mark);
  while (leaks.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100)); // processes killed by the last test may still be exiting
    leaks = leakedProcesses(mark);
  }
  if (leaks.length > 0) {
    for (const p of leaks) process.kill(p.pid, 'SIGKILL');
    throw new Error(
      `leak check: ${leaks.length} process(es) left behind:\n${leaks.map((p) => `  ${p.pid} ${p.cmd}`).join('\n')}`,
    );
  }
  fs.writeSync(2, 'leak check: no process left behind\n');
};
