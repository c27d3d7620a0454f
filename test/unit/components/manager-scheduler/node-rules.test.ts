import { describe, expect, it } from '@jest/globals';
import {
  ManagerSchedulerCore,
  type PilotCapacity,
} from '../../../../src/components/manager-scheduler/core';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import { CoreHarness, taskRecord } from '../../../support/core-harness';

/** Which pilot a task with placement rules goes to: one with a node they allow, preferred first. */

const HDD: PilotCapacity = {
  uid: 'p1',
  cores: 4,
  gpus: 0,
  nodes: [{ name: 'a', labels: { disk: 'hdd' } }],
};
const NVME: PilotCapacity = {
  uid: 'p2',
  cores: 4,
  gpus: 0,
  nodes: [
    { name: 'b', labels: { disk: 'hdd' } },
    { name: 'c', labels: { disk: 'nvme' } },
  ],
};

function setup(...pilots: (PilotCapacity & { active?: boolean })[]) {
  const h = new CoreHarness();
  const effects = h.effects({
    forward: (ts: TaskRecord[]) =>
      h.rec.record(`forward ${ts.map((t) => `${t.uid}->${t.pilot ?? '?'}`).join(', ')}`),
  });
  const core = new ManagerSchedulerCore(effects, h.clock);
  for (const p of pilots) core.onPilotAdded({ active: true, ...p });
  return Object.assign(h, { core });
}

function pending(uid: string, description: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'TMGR_SCHEDULING_PENDING', { description });
}

const where = (ts: TaskRecord[]): string => ts.map((t) => `${t.uid}->${t.pilot ?? '?'}`).join(', ');

describe('ManagerSchedulerCore: placement rules', () => {
  it('gives a task with a selector or a node named only to pilots with such a node', () => {
    const { rec, core } = setup(HDD, NVME);
    const ts = [
      pending('s1', { placement: { selector: { disk: 'nvme' } } }),
      pending('s2', { placement: { selector: { disk: 'nvme' } } }),
      pending('n1', { placement: { node: 'a' } }),
      pending('any'),
    ];
    core.onTasks(ts);
    rec.take();
    expect(where(ts)).toBe('s1->p2, s2->p2, n1->p1, any->p1');
  });

  it('fails at once a task no pilot has a node for, naming the rule and the pilots’ nodes', () => {
    const { rec, core } = setup(HDD, NVME);
    const t = pending('t', { placement: { selector: { gpu: 'h100' } } });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t TMGR_SCHEDULING, t FAILED']);
    expect(t.reason?.code).toBe('E_NEVER_FITS');
    expect(t.reason?.message).toBe(
      'task must run on labels gpu=h100; no pilot big enough has such a node ' +
        '(p1: a (disk=hdd); p2: b (disk=hdd), c (disk=nvme))',
    );
  });

  it('holds a task with rules while a pilot that might have its node has not reported', () => {
    const { rec, core } = setup(HDD);
    core.onPilotAdded({ uid: 'p9', cores: 4, gpus: 0 });
    const t = pending('t', { placement: { node: 'c' } });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t TMGR_SCHEDULING']);
    core.onPilotActive({ uid: 'p9', cores: 4, gpus: 0, nodes: [{ name: 'c', labels: {} }] });
    expect(rec.take()).toEqual(['notify t TMGR_STAGING_INPUT_PENDING', 'forward t->p9']);
  });

  it('fails a waiting task once the pilots that report have no node for it', () => {
    const { rec, core } = setup(HDD);
    core.onPilotAdded({ uid: 'p9', cores: 4, gpus: 0 });
    const t = pending('t', { placement: { node: 'c' } });
    core.onTasks([t]);
    rec.take();
    core.onPilotActive({ uid: 'p9', cores: 4, gpus: 0, nodes: [{ name: 'd', labels: {} }] });
    expect(rec.take()).toEqual(['notify t FAILED']);
    expect(t.reason?.code).toBe('E_NEVER_FITS');
  });

  it('prefers a pilot holding a node the task prefers over a less loaded one', () => {
    const { rec, core } = setup(HDD, NVME);
    core.onTasks([pending('x1', { pilot: 'p2' }), pending('x2', { pilot: 'p2' })]);
    rec.take();
    const p = pending('p', { placement: { prefer: ['zz', 'c'] } });
    const q = pending('q', { placement: { prefer: ['zz'] } });
    core.onTasks([p, q]);
    rec.take();
    // p2 is the more loaded, but holds node c; no pilot holds zz: the least loaded
    expect(where([p, q])).toBe('p->p2, q->p1');
  });

  it('fails a task pinned to a pilot without such a node', () => {
    const { rec, core } = setup(HDD, NVME);
    const t = pending('t', { pilot: 'p1', placement: { selector: { disk: 'nvme' } } });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t TMGR_SCHEDULING, t FAILED']);
    expect(t.reason?.message).toContain('task must run on labels disk=nvme');
  });
});
