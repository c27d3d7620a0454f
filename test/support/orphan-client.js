// A client that starts a pilot with a long task, prints the agent's pid and the task's sandbox
// (where its pid file is), and waits to be killed (the test kills it with SIGKILL to see the
// agent clean up by itself once its client timeout, 1 s here, has passed without a heartbeat).
// argv: the session directory, then the task's output mode ('stream' or 'files').
const { existsSync, readFileSync, watch } = require('node:fs');
const { Session, PilotManager, TaskManager } = require('../../dist/src');

/** Resolves once the task's shell has written its pid (AGENT_EXECUTING comes before that). */
function pidWritten(sandbox) {
  const written = () =>
    existsSync(`${sandbox}/pid`) && /\n$/.test(readFileSync(`${sandbox}/pid`, 'utf8'));
  return new Promise((resolve) => {
    const watcher = watch(sandbox, () => {
      if (written()) {
        watcher.close();
        resolve();
      }
    });
    if (written()) {
      watcher.close();
      resolve();
    }
  });
}

(async () => {
  const session = await Session.open({ dir: process.argv[2] });
  const pmgr = new PilotManager(session);
  const tmgr = new TaskManager(session);
  const [pilot] = await pmgr.submitPilots([
    { resource: 'local', cores: 1, runtimeMin: 5, agent: { clientTimeoutS: 1, clientGraceS: 1 } },
  ]);
  tmgr.addPilots([pilot]);
  const [task] = await tmgr.submitTasks([
    {
      executable: '/bin/sh',
      arguments: ['-c', 'echo started; echo $$ > pid; exec sleep 60'],
      output: process.argv[3],
    },
  ]);
  await tmgr.waitTasks({ uids: [task.uid], states: ['AGENT_EXECUTING'], timeoutMs: 10000 });
  const sandbox = task.sandbox;
  await pidWritten(sandbox);
  // the agent's pid, as the launcher journaled it for a resumed client
  const agent = readFileSync(`${session.dir}/journal.jsonl`, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l))
    .find((e) => e.t === 'agent' && e.pid !== undefined).pid;
  const out = { agent, sandbox, uid: task.uid, pilotSandbox: pilot.sandbox };
  process.stdout.write(JSON.stringify(out) + '\n');
})();
