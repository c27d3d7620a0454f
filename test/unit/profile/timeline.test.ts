import { describe, expect, it } from '@jest/globals';
import { syntheticProfile } from '../../../bench/synthetic-profile';
import { pilotIntervals } from '../../../src/profile/intervals';
import { renderTimeline, timelineData } from '../../../src/profile/timeline';
import { stateCounts } from '../../../src/profile/timeline/series';
import type { Profile } from '../../../src/profile/types';
import { attempt, pilot, s, T0, task } from '../../support/profiles';

function twoNodes(): Profile {
  const p = pilot(
    'p1',
    [
      { name: 'g', cores: 2, gpus: 1 },
      { name: 'c', cores: 1, gpus: 0 },
    ],
    { job: 0, active: 1, end: 10 },
  );
  p.states.unshift({ state: 'NEW', ts: s(0) });
  const at = { wait: 1, alloc: 2, exec: 3, launched: 4, exited: 6, release: 7, end: 8 };
  const gpu = attempt('p1', at, [{ node: 'g', cores: [1], gpus: [0] }]);
  const bad = attempt('p1', { ...at, end: 9 }, [{ node: 'c', cores: [0], gpus: [] }], 'FAILED');
  bad.reason = { code: 'E_EXIT_CODE', message: 'task exited with code 3', component: 'Executor' };
  const t1 = task('t1', gpu);
  const t2 = task('</script><b>', bad);
  t1.attempts[0]!.states.unshift({ state: 'NEW', ts: s(0.5) });
  return { session: 'pf.t', readAt: s(20), pilots: [p], tasks: [t1, t2] };
}

describe('timelineData', () => {
  it("lays a lane per core and GPU, node by node, and maps each attempt's slots to them", () => {
    const d = timelineData(twoNodes());
    expect(d.lanes.map((l) => `${l.node} ${l.gpu ? 'gpu' : 'core'} ${l.index}`)).toEqual([
      'g core 0',
      'g core 1',
      'g gpu 0',
      'c core 0',
    ]);
    expect(d.origin).toBe(T0);
    expect(d.held).toBe(2);
    expect([...d.times.subarray(0, 5)]).toEqual([2000, 3000, 4000, 6000, 7000]);
    expect([...d.laneList]).toEqual([1, 2, 3]);
    expect([...d.laneStart]).toEqual([0, 2, 3]);
    expect(d.states[d.stateOf[1]!]).toBe('FAILED');
    expect(d.reasons[1]).toBe('E_EXIT_CODE: task exited with code 3');
    expect(d.pilots[0]!.times).toEqual([0, 0, 1000, 10000, 10000]);
  });
});

describe("a pilot's bar", () => {
  const submittedAt = (resource: string): Profile => {
    const p = pilot('p1', [{ name: 'n', cores: 1, gpus: 0 }], { job: 3, active: 4, end: 10 });
    p.resource = resource;
    p.states.unshift({ state: 'NEW', ts: s(1) });
    return { session: 'pf.t', readAt: s(20), pilots: [p], tasks: [] };
  };

  it('shows a batch pilot waiting for its job from its submission to its job', () => {
    const prof = submittedAt('slurm');
    expect(timelineData(prof).pilots[0]!.times).toEqual([0, 2000, 3000, 9000, 9000]);
    expect(pilotIntervals(prof.pilots[0]!, prof.readAt)).toMatchObject({
      waitingForJob: [s(1), s(3)],
      startUp: [s(3), s(4)],
    });
  });

  it('shows a local pilot, which waits for no job, starting up from its submission', () => {
    const prof = submittedAt('local');
    expect(timelineData(prof).pilots[0]!.times).toEqual([0, 0, 3000, 9000, 9000]);
    const iv = pilotIntervals(prof.pilots[0]!, prof.readAt);
    expect(iv.waitingForJob).toBeUndefined();
    expect(iv.startUp).toEqual([s(1), s(4)]);
  });

  it('shows a local pilot not started yet as starting up, a batch one as waiting', () => {
    for (const [resource, key] of [
      ['local', 'startUp'],
      ['slurm', 'waitingForJob'],
    ] as const) {
      const p = pilot('p1', undefined, {});
      p.resource = resource;
      p.states.unshift({ state: 'NEW', ts: s(1) });
      expect(pilotIntervals(p, s(5))).toEqual({ [key]: [s(1), s(5)] });
    }
  });
});

describe('stateCounts', () => {
  it('counts tasks pending, running, done and failed over time', () => {
    const c = stateCounts(twoNodes(), T0);
    const at = (ms: number) => {
      const i = c.t.findLastIndex((t) => t <= ms);
      return [c.pending[i], c.running[i], c.done[i], c.failed[i]];
    };
    expect(at(600)).toEqual([1, 0, 0, 0]);
    expect(at(1500)).toEqual([2, 0, 0, 0]);
    expect(at(3500)).toEqual([0, 2, 0, 0]);
    expect(at(8500)).toEqual([0, 1, 1, 0]);
    expect(at(9500)).toEqual([0, 0, 1, 1]);
  });

  it('keeps at most about `points` steps and the last counts exact', () => {
    const p = syntheticProfile({ tasks: 5000, nodes: [{ cores: 16, gpus: 0 }], failEvery: 10 });
    const c = stateCounts(p, p.pilots[0]!.states[0]!.ts, 200);
    expect(c.t.length).toBeLessThanOrEqual(202);
    const last = c.t.length - 1;
    expect([c.pending[last], c.running[last], c.done[last], c.failed[last]]).toEqual([
      0, 0, 4500, 500,
    ]);
  });
});

describe('renderTimeline', () => {
  it('writes one self-contained page whose data no task name can break out of', () => {
    const html = renderTimeline(twoNodes());
    expect(html).not.toMatch(/\b(src|href)=/);
    expect(html.match(/<\/script>/g)).toHaveLength(2); // the data's and the code's
    const json = /<script type="application\/json" id="pf-data">(.*?)<\/script>/s.exec(html)![1]!;
    const data = JSON.parse(json) as { uids: string[]; times: string };
    expect(data.uids).toEqual(['t1', '</script><b>']);
    expect(Buffer.from(data.times, 'base64').length).toBe(2 * 5 * 8);
  });
});
