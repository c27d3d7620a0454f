// A client for the kill -9 loop of resume-kill-loop.test.ts. Every callback it gets is
// appended to LOG as one line "task|pilot UID STATE ATTEMPT", synchronously, so a kill -9 loses
// none it delivered.
//
//   node kill-loop-client.js first DIR LOG N
//     opens a session, starts a 2-core local pilot, submits N short tasks (every third one
//     exits 3, the others 0), prints {"session": uid} at once and {"executing": k} each time a
//     task reaches AGENT_EXECUTING, then waits to be killed.
//   node kill-loop-client.js resume DIR LOG SESSION WAIT_MS
//     resumes SESSION, waits up to WAIT_MS for every task to end, prints
//     {"tasks": {uid: [state, reason code or null]}}, closes the session, prints {"closed": true}.
const { Session } = require('../../dist/src');
const { record } = require('./client-record');

const [mode, dir, log, arg, waitMs] = process.argv.slice(2);
const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function first(n) {
  const session = await Session.open({ dir });
  say({ session: session.uid });
  const { pmgr, tmgr } = record(session, log);
  const [pilot] = await pmgr.submitPilots([
    { resource: 'local', cores: 2, runtimeMin: 10, agent: { clientTimeoutS: 60 } },
  ]);
  tmgr.addPilots([pilot]);
  let executing = 0;
  tmgr.onState((_t, s) => {
    if (s === 'AGENT_EXECUTING') say({ executing: ++executing });
  });
  await tmgr.submitTasks(
    Array.from({ length: n }, (_, i) => ({
      executable: '/bin/sh',
      arguments: ['-c', 'echo "$PF_TASK_ID"; exit "$0"', String(i % 3 === 2 ? 3 : 0)],
    })),
  );
}

async function resume(uid) {
  const session = await Session.open({ dir, resume: uid });
  const { tmgr } = record(session, log);
  await tmgr
    .waitTasks({ timeoutMs: Number(waitMs) })
    .catch((e) => process.stderr.write(`${e.message}\n`));
  const tasks = {};
  for (const t of tmgr.list()) tasks[t.uid] = [t.state, t.reason?.code ?? null];
  say({ tasks });
  await session.close();
  say({ closed: true });
}

(mode === 'first' ? first(Number(arg)) : resume(arg)).catch((e) => {
  process.stderr.write(`kill-loop-client: ${e.stack}\n`);
  process.exit(1);
});
