// A client for the resume crash test. Every callback it gets is appended to LOG as one line
// "task|pilot UID STATE ATTEMPT", synchronously, so a kill -9 loses none it delivered.
//
//   node resume-client.js first  DIR LOG GATE MARKS N RESOURCE
//     opens a session, starts a 2-core pilot (local, or one Slurm node), submits N tasks: the first half /bin/true, the
//     second half wait on a shared flock of GATE, then touch MARKS/<uid>. Prints
//     {"session": uid} at once and {"quiet": true, "atAgent": K} once the first half is DONE and both cores
//     run a gated task (nothing moves until GATE opens: gated tasks wait at the agent, or at the
//     client for room on the pilot), then waits to be killed.
//   node resume-client.js resume DIR LOG SESSION
//     resumes SESSION (listening on $PF_RESUME_BIND_HOST, if set), waits for every task to end,
//     prints {"states": {...}}, closes.
// Environment: PILOTFISH_STORE (a MongoDB URI: the session's store, given to both), PILOT_SANDBOX
// (the pilot's directory, outside the session's).
const { Session } = require('../../dist/src');
const { record } = require('./client-record');

const [mode, dir, log] = process.argv.slice(2);
const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function first(gate, marks, n, resource) {
  // PILOTFISH_STORE: a MongoDB URI (the MongoDB variant of the test); the resume reads it back
  const session = await Session.open({ dir, store: process.env.PILOTFISH_STORE ?? 'embedded' });
  say({ session: session.uid });
  const { pmgr, tmgr } = record(session, log);
  const size = resource === 'slurm' ? { nodes: 1 } : { cores: 2 };
  // PILOT_SANDBOX: the pilot's directory outside the session's (a test that removes the latter)
  const sandbox = process.env.PILOT_SANDBOX ? { sandbox: process.env.PILOT_SANDBOX } : {};
  const [pilot] = await pmgr.submitPilots([
    { resource, ...size, ...sandbox, runtimeMin: 10, agent: { clientTimeoutS: 120 } },
  ]);
  tmgr.addPilots([pilot]);
  let executing = 0;
  let bothCores;
  const running = new Promise((resolve) => (bothCores = resolve));
  tmgr.onState((t, s) => {
    if (s === 'AGENT_EXECUTING' && t.description.name === 'gated' && ++executing === 2) bothCores();
  });
  const half = n / 2;
  const tasks = await tmgr.submitTasks([
    ...Array.from({ length: half }, () => ({ executable: '/bin/true' })),
    ...Array.from({ length: n - half }, () => ({
      name: 'gated',
      executable: '/bin/sh',
      arguments: ['-c', 'flock -s "$0" true && touch "$1/$PF_TASK_ID"', gate, marks],
    })),
  ]);
  await tmgr.waitTasks({ uids: tasks.slice(0, half).map((t) => t.uid), timeoutMs: 120_000 });
  await tmgr.waitTasks({
    uids: tasks.slice(half).map((t) => t.uid),
    states: ['TMGR_SCHEDULING', 'AGENT_SCHEDULING', 'AGENT_EXECUTING_PENDING', 'AGENT_EXECUTING'],
    timeoutMs: 60_000,
  });
  await running;
  // late binding: only as many gated tasks as the pilot has room for went to its agent
  const atAgent = tasks.slice(half).filter((t) => t.state !== 'TMGR_SCHEDULING').length;
  // a later turn: every callback so far has returned and its count is written
  setImmediate(() => say({ quiet: true, atAgent }));
}

async function resume(uid) {
  // with PILOTFISH_STORE set, a session whose directory was removed is resumed from MongoDB
  const store = process.env.PILOTFISH_STORE ? { store: process.env.PILOTFISH_STORE } : {};
  // PF_RESUME_BIND_HOST: where the resumed client listens (the relocation test: not where it did)
  const bindHost = process.env.PF_RESUME_BIND_HOST;
  const session = await Session.open({
    dir,
    resume: uid,
    ...store,
    ...(bindHost ? { bindHost } : {}),
  });
  const { tmgr } = record(session, log);
  await tmgr.waitTasks({ timeoutMs: 120_000 });
  const states = {};
  for (const t of tmgr.list()) {
    states[t.state] = (states[t.state] ?? 0) + 1;
    if (t.state !== 'DONE') process.stderr.write(`${t.uid} ${t.state}: ${t.reason?.message}\n`);
  }
  await session.close();
  say({ states });
}

(mode === 'first'
  ? first(process.argv[5], process.argv[6], Number(process.argv[7]), process.argv[8])
  : resume(process.argv[5])
).catch((e) => {
  process.stderr.write(`resume-client: ${e.stack}\n`);
  process.exit(1);
});
