// A client for the resume-with-a-ready-service test.
//
//   node service-resume-client.js first DIR SERVER
//     opens a session with a 2-core local pilot, submits a service `web` (node SERVER, port
//     'auto', ready on HTTP GET /), prints {"session": uid} and, once it is ready,
//     {"endpoint": "host:port"}, then waits to be killed.
//   node service-resume-client.js resume DIR SESSION
//     resumes SESSION: waits for `web` to be ready (its endpoint comes from the store), submits a
//     client on 'ready' that prints what GET / answers, waits for it, cancels `web`, waits for
//     its end, prints {"endpoint", "client": [state, stdout], "web": [state, reason code]},
//     closes.
const { Session, PilotManager, TaskManager } = require('../../dist/src');

const [mode, dir, arg] = process.argv.slice(2);
const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function first(server) {
  const session = await Session.open({ dir });
  say({ session: session.uid });
  const pmgr = new PilotManager(session);
  const tmgr = new TaskManager(session);
  const [pilot] = await pmgr.submitPilots([
    { resource: 'local', cores: 2, runtimeMin: 10, agent: { clientTimeoutS: 120 } },
  ]);
  tmgr.addPilots([pilot]);
  await tmgr.submitTasks([
    {
      uid: 'web',
      mode: 'service',
      executable: process.execPath,
      arguments: [server],
      service: { port: 'auto', ready: { http: '/' } },
    },
  ]);
  say({ endpoint: await tmgr.waitReady('web', { timeoutMs: 60_000 }) });
}

async function resume(uid) {
  const session = await Session.open({ dir, resume: uid });
  // the managers in the order the first client made them: they take back its pilots and tasks
  new PilotManager(session);
  const tmgr = new TaskManager(session);
  const endpoint = await tmgr.waitReady('web', { timeoutMs: 60_000 });
  const [client] = await tmgr.submitTasks([
    {
      executable: process.execPath,
      arguments: [
        '-e',
        `require('node:http').get('http://' + process.env.PF_SERVICE_WEB + '/', (r) =>
           r.on('data', (d) => process.stdout.write(d)));`,
      ],
      after: [{ task: 'web', on: 'ready' }],
    },
  ]);
  await tmgr.waitTasks({ timeoutMs: 60_000 });
  await tmgr.cancelTasks(['web']);
  await tmgr.waitTasks({ uids: ['web'], timeoutMs: 60_000 });
  const web = tmgr.get('web');
  say({
    endpoint,
    client: [client.state, client.stdout],
    web: [web.state, web.reason?.code ?? null],
  });
  await session.close();
}

(mode === 'first' ? first(arg) : resume(arg)).catch((e) => {
  process.stderr.write(`service-resume-client: ${e.stack}\n`);
  process.exit(1);
});
