import { afterEach, expect, it } from '@jest/globals';
import * as path from 'node:path';
import { startRouter, type ModelRouter } from '../../../src/router/router';
import { fixtures } from '../../support/session-fixture';
import { describeSlurm, slurmEnv } from '../../support/slurm';

// The model router with a Slurm pilot as its backend: the replica is a service task in the
// pilot's batch job, reached at the endpoint its agent publishes.

const SERVER = path.resolve(__dirname, '../../support/model-server.js');

describeSlurm('the model router on a Slurm pilot', () => {
  const fixture = fixtures();
  let router: ModelRouter | undefined;
  afterEach(async () => {
    await router?.close();
    router = undefined;
  });

  it('starts a model in the batch job when a request names it, and answers through it', async () => {
    Object.assign(process.env, slurmEnv());
    const fx = await fixture.open({ resource: 'slurm', nodes: 1, runtimeMin: 5 }, false);
    router = await startRouter(fx.tmgr, fx.pmgr, {
      config: {
        models: [
          {
            name: 'a',
            service: {
              executable: process.execPath,
              arguments: [SERVER, '--name', 'a'],
              service: { port: 'auto', ready: { http: '/health' }, startupTimeoutS: 60 },
            },
          },
        ],
      },
    });
    const res = await fetch(`${router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${router.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const body = (await res.json()) as { model?: string; job?: string };
    expect([res.status, body.model]).toEqual([200, 'a']);
    expect(body.job).toMatch(/^\d+$/); // it ran inside the pilot's job
    const [replica] = router.snapshot().models[0]!.replicas;
    expect(replica).toMatchObject({ state: 'ready', pilot: fx.pilot.uid });
  }, 180_000);

  it('places a model on the labelled node its selector asks for, and says which', async () => {
    Object.assign(process.env, slurmEnv());
    const fx = await fixture.open(
      {
        resource: 'slurm',
        nodes: 2,
        runtimeMin: 5,
        // the label names n2: the job must get it (the lab has more nodes)
        directives: ['--nodelist=n1,n2'],
        nodeLabels: { n2: { disk: 'nvme' } },
      },
      false,
    );
    router = await startRouter(fx.tmgr, fx.pmgr, {
      config: {
        models: [
          {
            name: 'cached',
            service: {
              executable: process.execPath,
              arguments: [SERVER, '--name', 'cached'],
              placement: { selector: { disk: 'nvme' } },
              service: { port: 'auto', ready: { http: '/health' }, startupTimeoutS: 60 },
            },
          },
        ],
      },
    });
    const res = await fetch(`${router.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${router.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'cached', prompt: 'hi' }),
    });
    const body = (await res.json()) as { model?: string; node?: string };
    // the server itself says it runs on n2, as does the router
    expect([res.status, body.model, body.node]).toEqual([200, 'cached', 'n2']);
    const [replica] = router.snapshot().models[0]!.replicas;
    expect(replica).toMatchObject({ state: 'ready', pilot: fx.pilot.uid, node: 'n2' });
  }, 180_000);
});
