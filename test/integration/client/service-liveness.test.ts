import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Task } from '../../../src/client/task';
import type { TaskManager } from '../../../src/client/task-manager';
import type { TaskDescription } from '../../../src/generated';
import { waitForExit } from '../../support/processes';
import { fixtures } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';

/**
 * A service that stops answering once ready (SIGSTOP) or dies (kill -9): liveness probes
 * notice the first, and neither hands its dead endpoint to a dependent that has not started.
 */
describe('service liveness and dependents of a dead service', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-live-');

  /** An HTTP server on PF_PORT that writes its pid to `<dir>/pid.<attempt>`. */
  const server = (dir: string): string => {
    const script = path.join(dir, 'server.js');
    fs.writeFileSync(
      script,
      `
      const http = require('node:http');
      const pidFile = require('node:path').join(${JSON.stringify(dir)}, 'pid.' + process.env.PF_TASK_ATTEMPT);
      require('node:fs').writeFileSync(pidFile, String(process.pid));
      // a child of its own, which must die with it (its whole tree is killed)
      const child = require('node:child_process').spawn('sleep', ['300'], { stdio: 'ignore' });
      require('node:fs').writeFileSync(pidFile + '.child', String(child.pid));
      http.createServer((req, res) => res.end('ok')).listen(Number(process.env.PF_PORT));
      `,
    );
    return script;
  };

  /** Holds a core until `<dir>/go` exists (the dependents wait behind it). */
  const blocker = (dir: string): TaskDescription => ({
    uid: 'blocker',
    executable: '/bin/sh',
    arguments: ['-c', `while [ ! -e ${path.join(dir, 'go')} ]; do sleep 0.05; done`],
  });

  /** Prints the endpoint it was given and leaves `<dir>/ran.<uid>` behind. */
  const dependent = (uid: string, dir: string): TaskDescription => ({
    uid,
    executable: '/bin/sh',
    arguments: ['-c', `touch ${path.join(dir, `ran.${uid}`)}; echo "$PF_SERVICE_WEB"`],
    after: [{ task: 'web', on: 'ready' }],
  });

  /** Resolves once a task reaches `state` (in attempt `attempt`, if given). */
  const reaches = (tmgr: TaskManager, uid: string, state: string, attempt?: number) =>
    new Promise<void>((resolve) => {
      const off = tmgr.onState((task: Task, s, info) => {
        if (task.uid !== uid || s !== state) return;
        if (attempt !== undefined && info.attempt !== attempt) return;
        off();
        resolve();
      });
    });

  const pidOf = (dir: string, attempt: number): number =>
    Number(fs.readFileSync(path.join(dir, `pid.${attempt}`), 'utf8'));

  it('restarts a ready service that stops answering (SIGSTOP) as a new attempt; the stopped process is killed and dependents use the new endpoint', async () => {
    const dir = temp.make();
    const fx = await fixture.open({ cores: 2 });
    const [web] = await fx.tmgr.submitTasks([
      {
        uid: 'web',
        name: 'web',
        mode: 'service',
        executable: process.execPath,
        arguments: [server(dir)],
        retries: 1,
        service: {
          port: 'auto',
          ready: { http: '/' },
          liveness: { http: '/', intervalS: 0.2, failures: 2, timeoutS: 0.5 },
        },
      },
      blocker(dir),
    ]);
    const first = await fx.tmgr.waitReady('web', { timeoutMs: 30_000 });
    // let go with the endpoint while it serves; they wait for a core behind the blocker
    const scheduled = Promise.all(['w1', 'w2'].map((u) => reaches(fx.tmgr, u, 'AGENT_SCHEDULING')));
    const waiting = await fx.tmgr.submitTasks([dependent('w1', dir), dependent('w2', dir)]);
    await scheduled;
    const retried = reaches(fx.tmgr, 'web', 'TMGR_SCHEDULING_PENDING', 2);
    const stopped = pidOf(dir, 1);
    process.kill(stopped, 'SIGSTOP');
    await retried;
    await waitForExit(stopped, 10_000);
    const second = await fx.tmgr.waitReady('web', { timeoutMs: 30_000 });
    expect(second).not.toBe(first);
    expect(web!.attempt).toBe(2);
    expect(web!.endpoint).toBe(second);
    const [after] = await fx.tmgr.submitTasks([dependent('a1', dir)]);
    fs.writeFileSync(path.join(dir, 'go'), '');
    await fx.tmgr.waitTasks({ uids: ['w1', 'w2', 'a1'], timeoutMs: 30_000 });
    // the waiting ones went back to wait for the new attempt: each started once, as attempt 2
    expect(waiting.map((t) => t.attempt)).toEqual([2, 2]);
    for (const t of [...waiting, after!]) {
      expect([t.state, t.stdout?.trim()]).toEqual(['DONE', second]);
    }
    expect(web!.state).toBe('AGENT_EXECUTING');
  }, 60_000);

  it('ends FAILED E_SERVICE_UNHEALTHY when out of retries, with the probe and the misses', async () => {
    const dir = temp.make();
    const fx = await fixture.open({ cores: 2 });
    const [web] = await fx.tmgr.submitTasks([
      {
        uid: 'web',
        mode: 'service',
        executable: process.execPath,
        arguments: [server(dir)],
        service: {
          port: 'auto',
          liveness: { http: '/', intervalS: 0.2, failures: 3, timeoutS: 0.3 },
        },
      },
    ]);
    await fx.tmgr.waitReady('web', { timeoutMs: 30_000 });
    const pid = pidOf(dir, 1);
    process.kill(pid, 'SIGSTOP');
    await fx.tmgr.waitTasks({ uids: ['web'], timeoutMs: 30_000 });
    expect([web!.state, web!.reason?.code, web!.signal]).toEqual([
      'FAILED',
      'E_SERVICE_UNHEALTHY',
      'SIGKILL',
    ]);
    expect(web!.reason?.message).toContain('HTTP 2xx from GET /');
    expect(web!.reason?.message).toContain('3 probes in a row');
    await waitForExit(pid, 10_000);
    await waitForExit(Number(fs.readFileSync(path.join(dir, 'pid.1.child'), 'utf8')), 10_000);
  }, 60_000);

  it('cancels the waiting dependents of a ready service killed with kill -9 (E_DEPENDENCY); none starts', async () => {
    const dir = temp.make();
    const fx = await fixture.open({ cores: 2 });
    const [web] = await fx.tmgr.submitTasks([
      {
        uid: 'web',
        name: 'web',
        mode: 'service',
        executable: process.execPath,
        arguments: [server(dir)],
        service: { port: 'auto' },
      },
      blocker(dir),
    ]);
    await fx.tmgr.waitReady('web', { timeoutMs: 30_000 });
    const uids = ['d1', 'd2', 'd3', 'd4', 'd5'];
    const scheduled = Promise.all(uids.map((u) => reaches(fx.tmgr, u, 'AGENT_SCHEDULING')));
    const deps = await fx.tmgr.submitTasks(uids.map((u) => dependent(u, dir)));
    // each is given the endpoint and waits behind the blocker
    await scheduled;
    process.kill(pidOf(dir, 1), 'SIGKILL');
    await fx.tmgr.waitTasks({ uids: ['web', ...uids], timeoutMs: 30_000 });
    expect(web!.state).toBe('FAILED');
    for (const d of deps) {
      expect([d.state, d.reason?.code]).toEqual(['CANCELED', 'E_DEPENDENCY']);
      expect(d.reason?.message).toContain('web');
    }
    fs.writeFileSync(path.join(dir, 'go'), '');
    await fx.tmgr.waitTasks({ uids: ['blocker'], timeoutMs: 30_000 });
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('ran.'))).toEqual([]);
  }, 60_000);

  it('cancels the dependents waiting on another pilot too (service_gone reaches every agent)', async () => {
    const dir = temp.make();
    const fx = await fixture.open({ cores: 1 });
    const [other] = await fx.pmgr.submitPilots([{ resource: 'local', cores: 1, runtimeMin: 5 }]);
    fx.tmgr.addPilots([other!]);
    const [web] = await fx.tmgr.submitTasks([
      {
        uid: 'web',
        name: 'web',
        mode: 'service',
        executable: process.execPath,
        arguments: [server(dir)],
        service: { port: 'auto' },
        pilot: fx.pilot.uid,
      },
      { ...blocker(dir), pilot: other!.uid },
    ]);
    await fx.tmgr.waitReady('web', { timeoutMs: 30_000 });
    const uids = ['o1', 'o2', 'o3'];
    const scheduled = Promise.all(uids.map((u) => reaches(fx.tmgr, u, 'AGENT_SCHEDULING')));
    const deps = await fx.tmgr.submitTasks(
      uids.map((u) => ({ ...dependent(u, dir), pilot: other!.uid })),
    );
    await scheduled;
    process.kill(pidOf(dir, 1), 'SIGKILL');
    await fx.tmgr.waitTasks({ uids: ['web', ...uids], timeoutMs: 30_000 });
    expect(web!.state).toBe('FAILED');
    for (const d of deps) expect([d.state, d.reason?.code]).toEqual(['CANCELED', 'E_DEPENDENCY']);
    fs.writeFileSync(path.join(dir, 'go'), '');
    await fx.tmgr.waitTasks({ uids: ['blocker'], timeoutMs: 30_000 });
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('ran.'))).toEqual([]);
  }, 60_000);
});
