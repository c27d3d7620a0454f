import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { tempDirs } from '../../support/temp-dirs';

const DIST = path.resolve(__dirname, '../../../dist/src');

/** A client in a process of its own (Jest's process.env does not reach children). */
const CLIENT = `
const { Session, PilotManager, TaskManager } = require(process.argv[1]);
(async () => {
  const session = await Session.open({ dir: process.argv[2] });
  try {
    const pmgr = new PilotManager(session);
    const tmgr = new TaskManager(session);
    const [pilot] = await pmgr.submitPilots([{ resource: 'local', cores: 1, runtimeMin: 2 }]);
    tmgr.addPilots([pilot]);
    const [t] = await tmgr.submitTasks([{
      executable: '/bin/sh',
      arguments: ['-c', 'printenv PF_TASK_ID; printenv PILOTFISH_STORE; echo end'],
      output: 'files',
    }]);
    await tmgr.waitTasks({ timeoutMs: 30000 });
    process.stdout.write(JSON.stringify({ uid: t.uid, state: t.state, stdout: t.stdout }));
  } finally {
    await session.close();
  }
})();
`;

/**
 * PILOTFISH_STORE (pilotfish run's store, a URI that may hold a password) is in the client's
 * environment, which local agents inherit: the agent drops it, so no task can print it.
 */
describe("the client's store URI in its environment", () => {
  const temp = tempDirs('pf-store-env-');

  it('does not reach the tasks', async () => {
    const env = { ...process.env, PILOTFISH_STORE: 'mongodb://u:secret@127.0.0.1:1/x' };
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['-e', CLIENT, DIST, temp.make()],
        { env, timeout: 60_000 },
        (e, stdout, stderr) => (e === null ? resolve(stdout) : reject(new Error(stderr))),
      ),
    );
    const t = JSON.parse(out) as { uid: string; state: string; stdout: string };
    expect(t).toEqual({ uid: t.uid, state: 'DONE', stdout: `${t.uid}\nend\n` });
  }, 90_000);
});
