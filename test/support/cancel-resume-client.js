'use strict';
// A client for the journaled-cancel test: cancels tasks and is killed with SIGKILL in the same
// turn, before any of the cancel's effects can leave the process.
//
//   node cancel-resume-client.js first DIR GATE
//     opens a session with a 1-core local pilot, submits A (waits on a shared flock of GATE),
//     B (after A is final) and C (/bin/true); once A runs, prints {"session", "a", "b"},
//     cancels A and B and kills itself with SIGKILL in that turn.
//   node cancel-resume-client.js resume DIR SESSION
//     resumes SESSION, waits for every task, prints {"states": {uid: state}} and closes.
const { PilotManager, Session, TaskManager } = require('../../dist/src');

const [mode, dir] = process.argv.slice(2);
const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function first(gate) {
  const session = await Session.open({ dir });
  const pmgr = new PilotManager(session);
  const tmgr = new TaskManager(session);
  const [pilot] = await pmgr.submitPilots([
    { resource: 'local', cores: 1, runtimeMin: 10, agent: { clientTimeoutS: 120 } },
  ]);
  tmgr.addPilots([pilot]);
  const [a, b] = await tmgr.submitTasks([
    { uid: 'a', executable: '/bin/sh', arguments: ['-c', 'flock -s "$0" true', gate] },
    { uid: 'b', executable: '/bin/true', after: [{ task: 'a', on: 'final' }] },
    { uid: 'c', executable: '/bin/true' },
  ]);
  await tmgr.waitTasks({ uids: [a.uid], states: ['AGENT_EXECUTING'], timeoutMs: 60_000 });
  say({ session: session.uid, a: a.uid, b: b.uid });
  // the cancel is sent; nothing of it (a store write, a control message) may leave before the kill
  void tmgr.cancelTasks([a.uid, b.uid]);
  process.kill(process.pid, 'SIGKILL');
}

async function resume(uid) {
  const session = await Session.open({ dir, resume: uid });
  new PilotManager(session); // takes the pilot back (managers are named by their order)
  const tmgr = new TaskManager(session);
  await tmgr.waitTasks({ timeoutMs: 60_000 });
  const states = {};
  for (const t of tmgr.list()) states[t.uid] = t.state;
  await session.close();
  say({ states });
}

(mode === 'first' ? first(process.argv[4]) : resume(process.argv[4])).catch((e) => {
  process.stderr.write(`cancel-resume-client: ${e.stack}\n`);
  process.exit(1);
});
