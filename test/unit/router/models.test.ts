import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../../src/errors';
import { compileRouterConfig } from '../../../src/router/models';

const service = { executable: '/bin/srv', service: { port: 'auto' as const } };

function issues(config: unknown): { path: string; message: string }[] {
  try {
    compileRouterConfig(config);
  } catch (e) {
    if (e instanceof ValidationError) return e.issues;
    throw e;
  }
  throw new Error('compiled');
}

describe('compileRouterConfig', () => {
  it('fills in the defaults and what a replica holds', () => {
    const c = compileRouterConfig({
      models: [
        { name: 'llama', aliases: ['l'], service: { ...service, ranks: 2, gpusPerRank: 0.5 } },
      ],
    });
    const m = c.lookup('l')!;
    expect(m).toBe(c.models.get('llama'));
    expect(m).toMatchObject({
      minReplicas: 0,
      maxReplicas: 1,
      idleTtlMs: 300_000,
      concurrency: 8,
      queueLimit: 1000,
      queueTimeoutMs: 600_000,
      priority: 0,
      stopGraceMs: 30_000,
      handoffLeadMs: undefined,
      uses: { cores: 2, gpus: 1 },
    });
    expect(m.service).toMatchObject({ mode: 'service', retries: 0, executable: '/bin/srv' });
    expect(c.lookup('nope')).toBeUndefined();
  });

  it('names the path of what a schema cannot say', () => {
    expect(
      issues({
        models: [
          { name: 'a', service: { ...service, uid: 'x', pilot: 'p' } },
          { name: 'b', aliases: ['a'], service: { executable: '/bin/srv' } },
          { name: 'c', replicas: { min: 3, max: 2 }, service },
        ],
        swap: {
          policy: 'group',
          groups: [
            { name: 'g', members: ['a', 'zz'] },
            { name: 'h', members: ['a'] },
          ],
        },
      }),
    ).toEqual([
      { path: '/models/0/service/uid', message: 'is set by the router' },
      { path: '/models/0/service/pilot', message: 'is set by the router' },
      {
        path: '/models/1/service/service/port',
        message: "is required: the router sends requests to the model's port ('auto' is fine)",
      },
      { path: '/models/1/aliases/0', message: "'a' names another model already" },
      { path: '/models/2/replicas/min', message: 'must be at most replicas.max (2)' },
      {
        path: '/swap/groups/0/members/1',
        message: "must name a model of /models (by its name), not 'zz'",
      },
      {
        path: '/swap/groups/1/members/0',
        message: "'a' is in group 'g' already: a model is in one group at most",
      },
    ]);
  });

  it('wants every model in some set of a matrix', () => {
    expect(
      issues({
        models: [
          { name: 'a', service },
          { name: 'b', service },
        ],
        swap: { policy: 'matrix', sets: [['a']], costs: { q: 1 } },
      }),
    ).toEqual([
      { path: '/swap/costs/q', message: "must name a model of /models (by its name), not 'q'" },
      { path: '/swap/sets', message: "must put model 'b' in some set" },
    ]);
  });

  it('refuses what the schema does not allow, naming the path', () => {
    expect(issues({ models: [{ name: '-x', service, concurrency: 0 }] })).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: '/models/0/name' }),
        expect.objectContaining({ path: '/models/0/concurrency', message: 'must be >= 1' }),
      ]),
    );
  });
});
