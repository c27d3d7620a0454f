// A client for the resume-in-the-middle-of-a-DAG test. Callbacks go to LOG as in resume-client.js.
//
//   node dag-resume-client.js first DIR LOG GATE
//     opens a session with a 2-core local pilot and submits the DAG of DAG below; prints
//     {"session": uid} at once and {"quiet": true} once `flaky` is DONE (on its 2nd attempt) and
//     g1 and g2 run (they wait on a shared flock of GATE, holding both cores), then waits to be
//     killed. At that moment `bad` waits at the agent, the rest at the client (dependencies).
//   node dag-resume-client.js resume DIR LOG SESSION
//     resumes SESSION, waits for every task to end, prints {"tasks": {uid: [state, attempt,
//     reason code]}}, closes.
const { Session } = require('../../dist/src');
const { record } = require('./client-record');

const [mode, dir, log] = process.argv.slice(2);
const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const sh = (script, ...args) => ({ executable: '/bin/sh', arguments: ['-c', script, ...args] });

function dag(gate) {
  const gated = (uid) => ({ uid, after: ['flaky'], ...sh('flock -s "$0" true', gate) });
  return [
    { uid: 'top', executable: '/bin/true' },
    // fails its first attempt, before the kill
    { uid: 'flaky', after: ['top'], retries: 1, ...sh('[ "$PF_TASK_ATTEMPT" -gt 1 ]') },
    gated('g1'),
    gated('g2'),
    // runs (and fails) once the gate opens, with no client
    { uid: 'bad', after: ['flaky'], ...sh('flock -s "$0" false', gate) },
    { uid: 'bad-child', after: ['bad'], executable: '/bin/true' },
    { uid: 'cleanup', after: [{ task: 'bad', on: 'failed' }], executable: '/bin/true' },
    { uid: 'join', after: ['g1', 'g2'], executable: '/bin/true' },
    ...[1, 2, 3, 4, 5].map((i) => ({
      uid: `tail${i}`,
      after: [i === 1 ? 'join' : `tail${i - 1}`],
      executable: '/bin/true',
    })),
  ];
}

async function first(gate) {
  const session = await Session.open({ dir });
  say({ session: session.uid });
  const { pmgr, tmgr } = record(session, log);
  const [pilot] = await pmgr.submitPilots([
    { resource: 'local', cores: 2, runtimeMin: 10, agent: { clientTimeoutS: 120 } },
  ]);
  tmgr.addPilots([pilot]);
  const executing = new Set();
  let bothCores;
  const running = new Promise((resolve) => (bothCores = resolve));
  tmgr.onState((t, s) => {
    if (s === 'AGENT_EXECUTING' && (t.uid === 'g1' || t.uid === 'g2')) executing.add(t.uid);
    if (executing.size === 2) bothCores();
  });
  await tmgr.submitTasks(dag(gate));
  await tmgr.waitTasks({ uids: ['flaky'], timeoutMs: 60_000 });
  await running;
  // a later turn: every callback so far has returned and its line is written
  setImmediate(() => say({ quiet: true }));
}

async function resume(uid) {
  const session = await Session.open({ dir, resume: uid });
  const { tmgr } = record(session, log);
  await tmgr.waitTasks({ timeoutMs: 120_000 });
  const tasks = {};
  for (const t of tmgr.list()) tasks[t.uid] = [t.state, t.attempt, t.reason?.code ?? null];
  await session.close();
  say({ tasks });
}

(mode === 'first' ? first(process.argv[5]) : resume(process.argv[5])).catch((e) => {
  process.stderr.write(`dag-resume-client: ${e.stack}\n`);
  process.exit(1);
});
