import { describe, expect, it } from '@jest/globals';
import { fixtures } from '../../support/session-fixture';

/**
 * Placement by labels across real local pilots: the ManagerScheduler sends a task with a
 * selector only to a pilot whose node has the labels, `prefer` to a pilot with the node named,
 * and a task no node allows fails at once, naming the nodes and their labels.
 */
describe('placement by pilot labels', () => {
  const fixture = fixtures();

  it('runs each task on the pilot whose labels it selects, and says the node', async () => {
    const fx = await fixture.open({ cores: 2, labels: { disk: 'hdd' } });
    const [nvme] = await fx.pmgr.submitPilots([
      { resource: 'local', cores: 2, runtimeMin: 5, labels: { disk: 'nvme', site: 'lab' } },
    ]);
    fx.tmgr.addPilots([nvme!]);
    const tasks = await fx.tmgr.submitTasks(
      Array.from({ length: 6 }, (_, i) => ({
        executable: '/bin/true',
        placement: { selector: { disk: i % 2 === 0 ? 'nvme' : 'hdd' } },
      })),
    );
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(tasks.map((t) => t.state)).toEqual(Array(6).fill('DONE'));
    expect(tasks.map((t) => t.pilot)).toEqual(
      tasks.map((_, i) => (i % 2 === 0 ? nvme!.uid : fx.pilot.uid)),
    );
    expect(tasks[0]!.node).toBe(nvme!.nodes[0]!.name);
  }, 60_000);

  it('fails a task whose selector no node has, naming the pilots, nodes and labels', async () => {
    const fx = await fixture.open({ cores: 2, labels: { disk: 'hdd' } });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 20_000 });
    const [t] = await fx.tmgr.submitTasks([
      { executable: '/bin/true', placement: { selector: { gpu: 'h100' } } },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
    expect(t!.state).toBe('FAILED');
    expect(t!.reason?.code).toBe('E_NEVER_FITS');
    expect(t!.reason?.message).toContain('gpu=h100');
    expect(t!.reason?.message).toContain('disk=hdd');
  }, 60_000);
});
