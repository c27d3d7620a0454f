// Finds live processes carrying the test-run mark, other than jest itself and its workers.
const fs = require('node:fs');

function leakedProcesses(mark, self = process.pid) {
  const needle = Buffer.from(`PILOTFISH_TEST_MARK=${mark}`);
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === self) continue;
    try {
      const env = fs.readFileSync(`/proc/${pid}/environ`);
      if (!env.includes(needle)) continue;
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state === 'Z') continue; // already dead, waiting to be reaped
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      if (/jest-worker|processChild\.js|node_modules\/\.bin\/jest|jest\/bin\/jest/.test(cmd)) {
        continue;
      }
      out.push({ pid, cmd });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

module.exports = { leakedProcesses };
