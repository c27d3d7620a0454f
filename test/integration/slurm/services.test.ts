import { expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describeSlurm, slurmEnv } from '../../support/slurm';
import { fixtures } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';

describeSlurm('service tasks on a Slurm pilot', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-slurm-svc-');

  it("publish an endpoint on the agent's node that a dependent reaches, and stop DONE", async () => {
    Object.assign(process.env, slurmEnv());
    const script = path.join(temp.make(), 'server.js');
    fs.writeFileSync(
      script,
      `require('node:http').createServer((q, r) => r.end('hi from ' + process.env.SLURM_JOB_ID))
        .listen(Number(process.env.PF_PORT));`,
    );
    const fx = await fixture.open({ resource: 'slurm', nodes: 1, runtimeMin: 5 });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
    const [web, user] = await fx.tmgr.submitTasks([
      {
        uid: 'web',
        mode: 'service',
        executable: process.execPath,
        arguments: [script],
        service: { port: 'auto', ready: { http: '/' } },
      },
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
    const endpoint = await fx.tmgr.waitReady('web', { timeoutMs: 60_000 });
    expect(endpoint).toMatch(/^[\w.:-]+:\d+$/);
    await fx.tmgr.waitTasks({ uids: [user!.uid], timeoutMs: 60_000 });
    expect([user!.state, user!.reason?.message]).toEqual(['DONE', undefined]);
    expect(user!.stdout).toMatch(/^hi from \d+/);
    await fx.tmgr.cancelTasks(['web']);
    await fx.tmgr.waitTasks({ uids: ['web'], timeoutMs: 60_000 });
    expect(web!.state).toBe('DONE');
  }, 180_000);
});
