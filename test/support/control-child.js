// A live session for the control socket tests, run as a child process (its client can be killed).
//
//   node control-child.js DIR
//     opens a session in DIR with one local pilot of 2 cores and submits: `quick` (/bin/true),
//     `bad` (exits 3), two `long` tasks (sleep 600: they hold both cores) and three `waiting`
//     ones behind them. Prints {"session", "dir", "long": [uids], "waiting": [uids], "quick",
//     "bad"} once both long tasks execute and quick and bad ended; then, on SIGTERM, closes the
//     session and prints {"closed": true}.
const { Session, PilotManager, TaskManager } = require('../../dist/src');

const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function main(dir) {
  const session = await Session.open({ dir });
  const pmgr = new PilotManager(session, { shutdownGraceMs: 5_000 });
  const tmgr = new TaskManager(session);
  const [pilot] = await pmgr.submitPilots([{ resource: 'local', cores: 2, runtimeMin: 10 }]);
  tmgr.addPilots([pilot]);
  const [quick, bad] = await tmgr.submitTasks([
    { name: 'quick', executable: '/bin/true' },
    { name: 'bad', executable: '/bin/sh', arguments: ['-c', 'exit 3'] },
  ]);
  await tmgr.waitTasks({ uids: [quick.uid, bad.uid], timeoutMs: 120_000 });
  const long = await tmgr.submitTasks(
    [1, 2].map(() => ({ name: 'long', executable: '/bin/sleep', arguments: ['600'] })),
  );
  const waiting = await tmgr.submitTasks(
    [1, 2, 3].map(() => ({ name: 'waiting', executable: '/bin/true' })),
  );
  await tmgr.waitTasks({
    uids: long.map((t) => t.uid),
    states: ['AGENT_EXECUTING'],
    timeoutMs: 120_000,
  });
  say({
    session: session.uid,
    dir: session.dir,
    quick: quick.uid,
    bad: bad.uid,
    long: long.map((t) => t.uid),
    waiting: waiting.map((t) => t.uid),
  });
  process.once('SIGTERM', () => {
    session.close().then(
      () => {
        say({ closed: true });
        process.exit(0);
      },
      (e) => {
        process.stderr.write(`control-child: close: ${e.stack}\n`);
        process.exit(1);
      },
    );
  });
}

main(process.argv[2]).catch((e) => {
  process.stderr.write(`control-child: ${e.stack}\n`);
  process.exit(1);
});
