import { describe, expect, it } from '@jest/globals';
import { confineStaging, stagesOnClient } from '../../../src/service/staging';

const dirs = { artifacts: '/srv/pf/artifacts', files: '/srv/pf/files' };

describe("confineStaging: a service task's client-side paths stay in the service's directory", () => {
  it("puts relative outputs in the task's artifacts and inputs in files, keeping a trailing /", () => {
    const r = confineStaging(
      {
        executable: '/bin/true',
        inputStaging: [
          { source: 'data/in.csv', target: 'task://in.csv' },
          { source: 'client://cfg/', target: 'task://' },
        ],
        outputStaging: [
          { source: 'task://out', target: 'results/' },
          { source: 'task://log', target: 'client://./logs/run.log' },
          { source: 'task://x', target: 'pilot://x' },
          { source: 'task://all', target: 'client://' },
        ],
      },
      't1',
      dirs,
    );
    expect(r).toEqual({
      description: expect.objectContaining({
        inputStaging: [
          { source: 'client:///srv/pf/files/data/in.csv', target: 'task://in.csv' },
          { source: 'client:///srv/pf/files/cfg/', target: 'task://' },
        ],
        outputStaging: [
          { source: 'task://out', target: 'client:///srv/pf/artifacts/t1/results/' },
          { source: 'task://log', target: 'client:///srv/pf/artifacts/t1/logs/run.log' },
          { source: 'task://x', target: 'pilot://x' },
          { source: 'task://all', target: 'client:///srv/pf/artifacts/t1/' },
        ],
      }),
    });
  });

  it('refuses absolute client paths and climbing out, naming each path', () => {
    const r = confineStaging(
      {
        executable: '/bin/true',
        inputStaging: [{ source: 'client:///etc/shadow', target: 'task://s' }],
        outputStaging: [
          { source: 'task://a', target: 'a/../../b' },
          { source: 'task://a', target: 'ok/../fine' },
        ],
      },
      't1',
      dirs,
    );
    expect('issues' in r && r.issues.map((i) => i.path)).toEqual([
      '/inputStaging/0/source',
      '/outputStaging/0/target',
    ]);
  });

  it('leaves compute-side paths alone and tells which tasks stage on the client', () => {
    expect(stagesOnClient({ executable: '/bin/true' })).toBe(false);
    expect(
      stagesOnClient({
        executable: '/bin/true',
        inputStaging: [{ source: '/scratch/a', target: 'task://a' }],
      }),
    ).toBe(false);
    expect(
      stagesOnClient({
        executable: '/bin/true',
        outputStaging: [{ source: 'task://a', target: 'a' }],
      }),
    ).toBe(true);
  });
});
