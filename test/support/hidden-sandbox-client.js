// A client that cannot see its pilot's sandbox, for test/integration/slurm/hidden-sandbox.test.ts.
// Run it in a mount namespace of its own (`unshare -m --propagation private node ... DIR GATE`):
//
//   opens a session in DIR with a Slurm pilot (one spawner helper, stream files of 1 MiB: they
//   rotate every 256 KiB); once the pilot is active, mounts an empty tmpfs over the pilot's
//   sandbox in this namespace only (the agent, under slurmd, goes on writing the real one), as a
//   login node without the compute node's disk. Then runs `files` (output 'files', 3 lines) to
//   its end and starts `long` (output 'stream': 6,000 lines of 60 bytes, a wait on the flock GATE,
//   6,000 more), follows `long` with tmgr.tail, and prints
//   {"ready", "dir", "session", "sandbox", "hidden", "long", "files"} once its follower has line
//   6,000. Once `long` ended: {"followed": N, "inOrder": bool, "state", "lastStdout"}. On
//   SIGTERM: unmounts, closes the session, prints {"closed": true}.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const { Session, PilotManager, TaskManager } = require('../../dist/src');

const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const PAD = '.'.repeat(48);
const LINES = 12_000;

async function main(dir, gate) {
  const session = await Session.open({ dir });
  const pmgr = new PilotManager(session, { shutdownGraceMs: 5_000 });
  const tmgr = new TaskManager(session);
  const [pilot] = await pmgr.submitPilots([
    {
      resource: 'slurm',
      nodes: 1,
      runtimeMin: 5,
      agent: { spawners: 1, outputDiskBytes: 1024 * 1024 },
    },
  ]);
  tmgr.addPilots([pilot]);
  await pmgr.waitPilots({ uids: [pilot.uid], states: ['PMGR_ACTIVE'], timeoutMs: 150_000 });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', pilot.sandbox]);
  let mounted = true;
  const unmount = () => {
    if (mounted) execFileSync('umount', [pilot.sandbox]);
    mounted = false;
  };
  process.once('SIGTERM', () => {
    Promise.resolve()
      .then(unmount)
      .then(() => session.close())
      .then(
        () => {
          say({ closed: true });
          process.exit(0);
        },
        (e) => {
          process.stderr.write(`hidden-sandbox-client: close: ${e.stack}\n`);
          process.exit(1);
        },
      );
  });
  const hidden = fs.readdirSync(pilot.sandbox).length === 0;
  const [files] = await tmgr.submitTasks([
    {
      executable: '/bin/sh',
      arguments: ['-c', 'echo one; echo two; echo three'],
      output: 'files',
    },
  ]);
  await tmgr.waitTasks({ uids: [files.uid], timeoutMs: 60_000 });
  const half = LINES / 2;
  const [long] = await tmgr.submitTasks([
    {
      executable: '/bin/sh',
      arguments: [
        '-c',
        `seq -f "line %06g ${PAD}" 1 ${half}; flock -s "$0" true; ` +
          `seq -f "line %06g ${PAD}" ${half + 1} ${LINES}`,
        gate,
      ],
    },
  ]);
  let followed = 0;
  let inOrder = true;
  for await (const line of tmgr.tail(long.uid, { follow: true })) {
    followed++;
    if (line !== `line ${String(followed).padStart(6, '0')} ${PAD}`) inOrder = false;
    if (followed === half) {
      say({
        ready: true,
        dir: session.dir,
        session: session.uid,
        sandbox: pilot.sandbox,
        hidden,
        long: long.uid,
        files: files.uid,
      });
    }
  }
  say({ followed, inOrder, state: long.state, lastStdout: long.stdout.split('\n').at(-2) });
}

main(process.argv[2], process.argv[3]).catch((e) => {
  process.stderr.write(`hidden-sandbox-client: ${e.stack}\n`);
  process.exit(1);
});
