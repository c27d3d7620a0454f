import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TaskEndedError } from '../../../src/errors';
import type { TaskDescription } from '../../../src/generated';
import { fixtures } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';
import { waitForExit } from '../../support/processes';

/** Service tasks: real servers on real ports, probed until ready, with dependents as clients. */
describe('service tasks', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-svc-');

  /**
   * An HTTP server on PF_PORT that writes its pid to `pidFile`, says `listening on <port>`, and
   * answers /health with 503 for its first 300 ms (the probe must wait for a 2xx, not just a
   * connection), then 200; `/` answers `hello <n> from <task>`.
   */
  const server = (): { script: string; pidFile: string } => {
    const dir = temp.make();
    const script = path.join(dir, 'server.js');
    const pidFile = path.join(dir, 'pid');
    fs.writeFileSync(
      script,
      `
      const http = require('node:http');
      require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid));
      let warm = false, hits = 0;
      const server = http.createServer((req, res) => {
        if (req.url === '/health') { res.writeHead(warm ? 200 : 503); res.end(); return; }
        res.end('hello ' + ++hits + ' from ' + process.env.PF_TASK_ID);
      });
      server.listen(Number(process.env.PF_PORT), () => {
        console.log('listening on ' + process.env.PF_PORT);
        setTimeout(() => { warm = true; }, 300);
      });
      `,
    );
    return { script, pidFile };
  };

  /** An executable that GETs / of the service it waits for and prints the answer. */
  const client = (uid: string): TaskDescription => ({
    uid,
    executable: process.execPath,
    arguments: [
      '-e',
      `require('node:http').get('http://' + process.env.PF_SERVICE_WEB + '/', (r) => {
         let b = ''; r.on('data', (d) => (b += d)); r.on('end', () => console.log(b));
       });`,
    ],
    after: [{ task: 'web', on: 'ready' }],
  });

  /** Pids of live processes whose command line contains `marker`. */
  const pidsWith = (marker: string): number[] =>
    fs
      .readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(marker);
        } catch {
          return false;
        }
      })
      .map(Number);

  it("serves 3 dependent clients on a port 'auto' once its HTTP probe answers 2xx; waitTasks() does not wait for it; a cancel stops it DONE", async () => {
    const { script, pidFile } = server();
    const fx = await fixture.open({ cores: 2 });
    const [web, ...clients] = await fx.tmgr.submitTasks([
      {
        uid: 'web',
        name: 'web',
        mode: 'service',
        executable: process.execPath,
        arguments: [script],
        service: { port: 'auto', ready: { http: '/health' } },
      },
      client('c1'),
      client('c2'),
      client('c3'),
    ]);
    const endpoint = await fx.tmgr.waitReady('web', { timeoutMs: 30_000 });
    expect(endpoint).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(web!.endpoint).toBe(endpoint);
    // without uids it waits for the clients, not for the service, which serves on
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    const answers = clients.map((c) => [c.state, c.stdout?.trim()]);
    expect(answers.map((a) => a[0])).toEqual(['DONE', 'DONE', 'DONE']);
    expect(answers.map((a) => a[1]).sort()).toEqual([
      'hello 1 from web',
      'hello 2 from web',
      'hello 3 from web',
    ]);
    expect(web!.state).toBe('AGENT_EXECUTING');
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));

    await fx.tmgr.cancelTasks(['web']);
    await fx.tmgr.waitTasks({ uids: ['web'], timeoutMs: 30_000 });
    // serving until stopped is its job: stopped by SIGTERM, it ends DONE, its output staged
    expect([web!.state, web!.reason, web!.signal]).toEqual(['DONE', undefined, 'SIGTERM']);
    expect(web!.stdout).toContain(`listening on ${endpoint.split(':')[1]}`);
    await waitForExit(pid, 10_000);
  }, 90_000);

  it('fails a service that is never ready after its startupTimeoutS, with what it printed; its dependents end CANCELED and nothing of it is left', async () => {
    const fx = await fixture.open({ cores: 2 });
    const marker = 'sleep 299.123';
    const [slow, user] = await fx.tmgr.submitTasks([
      {
        uid: 'slow',
        mode: 'service',
        executable: '/bin/sh',
        arguments: ['-c', `echo warming up; echo still warming >&2; exec ${marker}`],
        service: { ready: { pattern: '^ready$' }, startupTimeoutS: 1 },
      },
      { uid: 'user', executable: '/bin/true', after: [{ task: 'slow', on: 'ready' }] },
    ]);
    const waited = await fx.tmgr.waitReady('slow', { timeoutMs: 30_000 }).catch((e: unknown) => e);
    expect(waited).toBeInstanceOf(TaskEndedError);
    expect((waited as Error).message).toContain('E_SERVICE_NOT_READY');
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect([slow!.state, slow!.reason?.code]).toEqual(['FAILED', 'E_SERVICE_NOT_READY']);
    expect(slow!.reason?.message).toContain('startupTimeoutS of 1 s');
    expect(slow!.reason?.message).toContain('a line matching /^ready$/');
    expect(slow!.stdout).toContain('warming up');
    expect(slow!.stderr).toContain('still warming');
    expect([user!.state, user!.reason?.code]).toEqual(['CANCELED', 'E_DEPENDENCY']);
    expect(pidsWith(marker)).toEqual([]);
  }, 60_000);

  it('fails a service that exits before it is ready with its exit code and what it printed', async () => {
    const fx = await fixture.open();
    const [bad] = await fx.tmgr.submitTasks([
      {
        mode: 'service',
        executable: '/bin/sh',
        arguments: ['-c', 'echo "cannot bind $PF_PORT" >&2; exit 3'],
        service: { port: 'auto' },
      },
    ]);
    await fx.tmgr.waitTasks({ uids: [bad!.uid], timeoutMs: 30_000 });
    expect([bad!.state, bad!.reason?.code, bad!.exitCode]).toEqual([
      'FAILED',
      'E_SERVICE_EXITED',
      3,
    ]);
    expect(bad!.reason?.message).toContain('exited with code 3 before it was ready');
    expect(bad!.stderr).toMatch(/cannot bind \d+/);
  }, 60_000);

  it('is ready on an output pattern; ends DONE when its pilot ends, and closing the session leaves no process of it', async () => {
    const { script, pidFile } = server();
    const fx = await fixture.open();
    const [web] = await fx.tmgr.submitTasks([
      {
        uid: 'web',
        mode: 'service',
        executable: process.execPath,
        arguments: [script],
        service: { port: 'auto', ready: { pattern: 'listening on \\d+' } },
      },
    ]);
    const endpoint = await fx.tmgr.waitReady('web', { timeoutMs: 30_000 });
    expect(endpoint).toMatch(/^127\.0\.0\.1:\d+$/);
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    fx.pmgr.cancelPilots([fx.pilot.uid]);
    await fx.tmgr.waitTasks({ uids: ['web'], timeoutMs: 30_000 });
    expect([web!.state, web!.reason]).toEqual(['DONE', undefined]);
    await fx.close();
    await waitForExit(pid, 10_000);
    expect(pidsWith(script)).toEqual([]);
  }, 60_000);

  it('leaves no process of a ready service behind when the session closes', async () => {
    const { script, pidFile } = server();
    const fx = await fixture.open();
    await fx.tmgr.submitTasks([
      {
        uid: 'web',
        mode: 'service',
        executable: process.execPath,
        arguments: [script],
        service: { port: 'auto' },
      },
    ]);
    await fx.tmgr.waitReady('web', { timeoutMs: 30_000 });
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    await fx.close();
    await waitForExit(pid, 10_000);
    expect(pidsWith(script)).toEqual([]);
  }, 60_000);

  it('rejects bad service descriptions with the path of each problem', async () => {
    const fx = await fixture.open();
    const svc = { mode: 'service' as const, executable: '/bin/true' };
    await expect(
      fx.tmgr.submitTasks([
        { ...svc, service: { ready: { http: '/health' } } },
        { ...svc, service: { port: 'any' as unknown as number } },
        { ...svc, service: { ready: { pattern: '(' } } },
        { executable: '/bin/true', service: { port: 80 } },
      ]),
    ).rejects.toThrow(
      /\/0\/service must have required property 'port'.*\/1\/service\/port.*\/2\/service\/ready\/pattern must match format "regex".*\/3\/service must not be given/s,
    );
  }, 30_000);
});
