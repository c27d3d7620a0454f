import { describe, expect, it } from '@jest/globals';
import { ExecutorCore } from '../../../../src/components/executor/core';
import type { ExecutorJob, ServiceJob } from '../../../../src/components/executor/effects';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import { AGENT_SHUTDOWN, CoreHarness, taskRecord } from '../../../support/core-harness';

const GRACE = 1_000;

function service(uid: string, s: TaskDescription['service'] = {}): TaskRecord {
  return taskRecord(uid, 'AGENT_EXECUTING_PENDING', {
    session: 'sess.1',
    pilot: 'pilot.1',
    sandbox: `/sb/${uid}`,
    slots: [{ node: 'n0', cores: [0], gpus: [] }],
    description: { mode: 'service', executable: '/srv/web', service: s },
  });
}

/** An ExecutorCore whose effects are recorded; `jobs` keeps the service jobs it started. */
function setup() {
  const h = new CoreHarness();
  const jobs: ServiceJob[] = [];
  const effects = h.effects({
    forward: (ts: TaskRecord[]) =>
      h.rec.record(`forward ${ts.map((t) => `${t.uid} ${t.state}`).join(', ')}`),
    release: h.uids('release'),
    start: (job: ExecutorJob) => {
      if (job.kind !== 'service') throw new Error(`a ${job.kind} job in the service tests`);
      jobs.push(job);
      h.rec.record(`start ${job.process.spec.uid}`);
    },
    stop: (uid: string, how: string) => h.rec.record(`stop ${uid} ${how}`),
    signal: (uid: string, signal: string) => h.rec.record(`signal ${uid} ${signal}`),
  });
  const core = new ExecutorCore(effects, h.clock, { killGraceMs: GRACE });
  const started = (t: TaskRecord): void => {
    core.onTasks([t]);
    expect(h.rec.take()).toEqual([`start ${t.uid}`, `notify ${t.uid} AGENT_EXECUTING`]);
  };
  return Object.assign(h, { jobs, core, started });
}

describe('ExecutorCore with service tasks', () => {
  it('starts a service with its port in the env, the checks it asked for, and the host of a local agent', () => {
    const { jobs, started } = setup();
    started(service('fixed', { port: 8080, ready: { http: '/health' } }));
    started(service('auto', { port: 'auto' }));
    started(service('bare'));
    expect(jobs.map((j) => [j.port, j.host, j.ready, j.process.spec.env.PF_PORT])).toEqual([
      [8080, '127.0.0.1', { http: '/health' }, '8080'],
      // the shell sets PF_PORT of 'auto' once it has a port; the default check is a connect
      ['auto', '127.0.0.1', { tcp: true }, undefined],
      [undefined, '127.0.0.1', {}, undefined],
    ]);
    expect(jobs[0]!.process.spec.stdoutPath).toBe('/sb/fixed/stdout');
  });

  it('says SERVICE_READY with the endpoint once, and the startup deadline goes', () => {
    const { rec, notes, core, clock, started } = setup();
    const t = service('web', { port: 'auto', startupTimeoutS: 2 });
    started(t);
    core.onReadyBulk([{ uid: 'web', endpoint: '127.0.0.1:4000' }]);
    core.onReadyBulk([{ uid: 'web', endpoint: '127.0.0.1:4001' }]); // repeated: ignored
    expect(rec.take()).toEqual(['notify web SERVICE_READY']);
    expect(notes.at(-1)).toMatchObject({
      kind: 'service',
      uid: 'web',
      attempt: 1,
      state: 'SERVICE_READY',
      component: 'Executor',
      detail: { endpoint: '127.0.0.1:4000' },
    });
    expect(t.endpoint).toBe('127.0.0.1:4000');
    clock.advance(10_000);
    rec.expectNoMore();
  });

  it('kills an unhealthy ready service at once (SIGKILL, no grace) with E_SERVICE_UNHEALTHY; not one that is not ready or already stopping', () => {
    const { rec, core, started } = setup();
    const t = service('web', { port: 'auto', liveness: { http: '/h', intervalS: 1, failures: 2 } });
    started(t);
    core.onUnhealthyBulk([{ uid: 'web', misses: 2 }]); // not ready yet: its startup timeout's
    rec.expectNoMore();
    core.onReadyBulk([{ uid: 'web', endpoint: '127.0.0.1:4000' }]);
    rec.take();
    core.onUnhealthyBulk([{ uid: 'web', misses: 2 }]);
    core.onUnhealthyBulk([{ uid: 'web', misses: 3 }]); // killed already
    expect(rec.take()).toEqual(['stop web kill']);
    expect(t.reason).toMatchObject({ code: 'E_SERVICE_UNHEALTHY', component: 'Executor' });
    expect(t.reason!.message).toContain(
      'HTTP 2xx from GET /h on 127.0.0.1:4000 missed 2 probes in a row (every 1 s, 2 s each)',
    );
    core.onExitedBulk([{ uid: 'web', exitCode: null, signal: 'SIGKILL' }]);
    expect(rec.take()).toEqual([
      'notify web AGENT_STAGING_OUTPUT_PENDING',
      'forward web AGENT_STAGING_OUTPUT_PENDING',
      'release web',
    ]);
    expect(t.reason?.code).toBe('E_SERVICE_UNHEALTHY');
  });

  it('stops a service not ready within its startupTimeoutS and fails it, naming what it waited for', () => {
    const { rec, core, clock, started } = setup();
    const t = service('slow', { ready: { pattern: '^up$' }, startupTimeoutS: 2 });
    started(t);
    clock.advance(1_999);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()).toEqual(['stop slow term']);
    clock.advance(GRACE);
    expect(rec.take()).toEqual(['stop slow kill']);
    core.onExited('slow', { exitCode: null, signal: 'SIGKILL' });
    expect(rec.take()).toEqual([
      'notify slow AGENT_STAGING_OUTPUT_PENDING',
      'forward slow AGENT_STAGING_OUTPUT_PENDING',
      'release slow',
    ]);
    expect(t.reason).toMatchObject({
      code: 'E_SERVICE_NOT_READY',
      message: expect.stringContaining(
        'startupTimeoutS of 2 s (waiting for a line matching /^up$/)',
      ),
    });
    // a ready report after the deadline changes nothing
    core.onReadyBulk([{ uid: 'slow', endpoint: 'x' }]);
    rec.expectNoMore();
  });

  it('fails a service that exits before it is ready, with its exit code', () => {
    const { rec, core, started } = setup();
    const t = service('bad', { port: 'auto' });
    started(t);
    core.onExited('bad', { exitCode: 3, signal: null });
    expect(rec.take()).toEqual([
      'notify bad AGENT_STAGING_OUTPUT_PENDING',
      'forward bad AGENT_STAGING_OUTPUT_PENDING',
      'release bad',
    ]);
    expect(t.reason).toMatchObject({
      code: 'E_SERVICE_EXITED',
      message:
        "service '/srv/web' exited with code 3 before it was ready (see its stdout and stderr)",
    });
  });

  it('stops a ready service on cancel and hands it on (stopped, no reason): it ends DONE downstream', () => {
    const { rec, core, started } = setup();
    const t = service('web', { port: 'auto' });
    started(t);
    core.onReadyBulk([{ uid: 'web', endpoint: 'h:1' }]);
    rec.take();
    core.onCancel(['web']);
    expect(rec.take()).toEqual(['stop web term']);
    core.onExited('web', { exitCode: null, signal: 'SIGTERM' });
    expect(rec.take()).toEqual([
      'notify web AGENT_STAGING_OUTPUT_PENDING',
      'forward web AGENT_STAGING_OUTPUT_PENDING',
      'release web',
    ]);
    expect([t.stopped, t.canceled, t.reason]).toEqual([true, undefined, undefined]);
  });

  it('cancels a service that is not ready yet like any task', () => {
    const { rec, core, started } = setup();
    const t = service('web', { port: 'auto' });
    started(t);
    core.onCancel(['web']);
    expect(rec.take()).toEqual(['stop web term']);
    core.onExited('web', { exitCode: null, signal: 'SIGTERM' });
    expect(rec.take()).toEqual(['notify web CANCELED', 'release web']);
    expect(t.stopped).toBeUndefined();
  });

  it('ends a ready service DONE on shutdown, and one not ready with the shutdown', () => {
    const { rec, notes, core, started } = setup();
    started(service('ready', { port: 'auto' }));
    started(service('starting', { port: 'auto' }));
    core.onReadyBulk([{ uid: 'ready', endpoint: 'h:1' }]);
    rec.take();
    core.onShutdown('CANCELED', AGENT_SHUTDOWN);
    expect(rec.take()).toEqual([
      'stop ready kill',
      'stop starting kill',
      'notify ready DONE, starting CANCELED',
      'release ready, starting',
    ]);
    expect(notes.at(-2)).toMatchObject({ state: 'DONE', detail: { exitCode: null, signal: null } });
  });
});
