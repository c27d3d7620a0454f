/**
 * A model server as a service task, and a sweep of function calls as its clients: the server
 * starts on a free port, loads its "model", and answers /health with 200 once it has; the 200
 * calls wait for it (`after: on 'ready'`), each POSTs one input to PF_SERVICE_MODEL and returns
 * the prediction. Then the server is stopped: it ends DONE. Exits 0 when all went so.
 *   npm run example:service
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PilotManager, Session, TaskManager } from '../src';

/** The server: a word list stands in for a model that takes a while to load. */
const SERVER = `
const http = require('node:http');
let model;
setTimeout(() => { model = { good: 1, great: 2, bad: -1, awful: -2 }; }, 500);
http.createServer((req, res) => {
  if (req.url === '/health') { res.writeHead(model ? 200 : 503); return res.end(); }
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    const words = JSON.parse(body).text.split(/\\W+/);
    const score = words.reduce((s, w) => s + (model[w.toLowerCase()] ?? 0), 0);
    res.end(JSON.stringify({ score, label: score >= 0 ? 'positive' : 'negative' }));
  });
}).listen(Number(process.env.PF_PORT));
`;

/** The client: one call per input, to the endpoint its task was given. */
const CLIENT = `
exports.predict = async (text) => {
  const res = await fetch('http://' + process.env.PF_SERVICE_MODEL + '/predict', {
    method: 'POST',
    body: JSON.stringify({ text }),
  });
  return res.json();
};
`;

async function main(): Promise<number> {
  const session = await Session.open({ dir: '.pilotfish' });
  try {
    const code = path.join(session.dir, 'code');
    fs.mkdirSync(code);
    fs.writeFileSync(path.join(code, 'server.js'), SERVER);
    fs.writeFileSync(path.join(code, 'client.js'), CLIENT);

    const pmgr = new PilotManager(session);
    const [pilot] = await pmgr.submitPilots([{ resource: 'local', runtimeMin: 10 }]);
    const tmgr = new TaskManager(session);
    tmgr.addPilots([pilot!]);

    const reviews = Array.from({ length: 200 }, (_, i) =>
      i % 3 === 0 ? 'a great film' : i % 3 === 1 ? 'bad, awful acting' : 'good enough',
    );
    const [server, ...calls] = await tmgr.submitTasks([
      {
        uid: 'model', // dependents name it in `after`; its name gives PF_SERVICE_MODEL
        name: 'model',
        mode: 'service',
        executable: process.execPath,
        arguments: [path.join(code, 'server.js')],
        service: { port: 'auto', ready: { http: '/health' }, startupTimeoutS: 30 },
      },
      ...reviews.map((text) => ({
        mode: 'function' as const,
        function: { module: path.join(code, 'client.js'), export: 'predict', args: [text] },
        after: [{ task: 'model', on: 'ready' as const }],
      })),
    ]);
    console.log(`model serving at ${await tmgr.waitReady(server!.uid, { timeoutMs: 60_000 })}`);
    await tmgr.waitTasks({ timeoutMs: 120_000 }); // the calls: services are not waited for
    const labels: Record<string, number> = {};
    for (const c of calls) {
      const label = (c.result as { label?: string } | undefined)?.label ?? c.state;
      labels[label] = (labels[label] ?? 0) + 1;
    }
    console.log('predictions:', labels);

    await tmgr.cancelTasks([server!.uid]); // a ready service stops DONE
    await tmgr.waitTasks({ uids: [server!.uid], timeoutMs: 30_000 });
    console.log(`model ${server!.state}`);
    const ok = server!.state === 'DONE' && calls.every((c) => c.state === 'DONE');
    console.log(ok ? 'all tasks ended as expected' : 'UNEXPECTED final states');
    return ok ? 0 : 1;
  } finally {
    await session.close();
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
