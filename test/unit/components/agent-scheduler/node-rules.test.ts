import { describe, expect, it } from '@jest/globals';
import {
  AgentSchedulerCore,
  type NodeResources,
} from '../../../../src/components/agent-scheduler/core';
import type { Labels, TaskDescription, TaskRecord } from '../../../../src/generated';
import { CoreHarness, taskRecord, uidsLine } from '../../../support/core-harness';

/** A task's placement rules (placement: a node named, a selector, nodes preferred, GPUs seen). */

function node(name: string, cores: number, labels?: Labels, gpus = 0): NodeResources {
  return { name, cores, gpus, memMb: 8_192, ...(labels !== undefined ? { labels } : {}) };
}

function setup(nodes: NodeResources[]) {
  const h = new CoreHarness();
  const core = new AgentSchedulerCore(h.effects({}), h.clock, nodes, undefined, undefined, 0);
  return Object.assign(h, { core });
}
type Setup = ReturnType<typeof setup>;

function pending(uid: string, description: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'AGENT_SCHEDULING_PENDING', { description });
}

function started(s: Setup, ...tasks: TaskRecord[]): void {
  s.core.onTasks(tasks);
  expect(s.rec.take()).toEqual([
    `notify ${[
      ...tasks.map((t) => `${t.uid} AGENT_SCHEDULING`),
      ...tasks.map((t) => `${t.uid} AGENT_EXECUTING_PENDING`),
    ].join(', ')}`,
    uidsLine('forward', tasks),
  ]);
}

const nodesOf = (t: TaskRecord): string[] => (t.slots ?? []).map((sl) => sl.node);

describe('AgentSchedulerCore: placement rules', () => {
  const pilot = () =>
    setup([
      node('a', 2, { disk: 'hdd' }),
      node('b', 2, { disk: 'nvme', gpu: 'a100' }),
      node('c', 2, { disk: 'nvme' }),
    ]);

  it('puts a task with a selector only on nodes that carry every label it selects', () => {
    const s = pilot();
    const ts = [0, 1, 2, 3].map((i) =>
      pending(`t${i}`, { placement: { selector: { disk: 'nvme' } } }),
    );
    started(s, ...ts);
    expect(ts.flatMap(nodesOf).sort()).toEqual(['b', 'b', 'c', 'c']);
    // the nvme nodes are full: the next one waits, though node a has room
    const w = pending('w', { placement: { selector: { disk: 'nvme' } } });
    s.core.onTasks([w]);
    expect(s.rec.take()).toEqual(['notify w AGENT_SCHEDULING']);
    const both = pending('both', { placement: { selector: { disk: 'nvme', gpu: 'a100' } } });
    s.core.onTasks([both]);
    expect(s.rec.take()).toEqual(['notify both AGENT_SCHEDULING']);
    // t on node c ends: w goes there; `both` needs b
    s.core.onReleased([{ uid: ts.find((t) => nodesOf(t)[0] === 'c')!.uid }]);
    expect(s.rec.take()).toEqual(['notify w AGENT_EXECUTING_PENDING', 'forward w']);
    expect(nodesOf(w)).toEqual(['c']);
    s.core.onReleased([{ uid: ts.find((t) => nodesOf(t)[0] === 'b')!.uid }]);
    expect(s.rec.take()).toEqual(['notify both AGENT_EXECUTING_PENDING', 'forward both']);
    expect(nodesOf(both)).toEqual(['b']);
  });

  it('puts every rank of a task that names a node on that node, and waits for it', () => {
    const s = pilot();
    const t = pending('t', { ranks: 2, placement: { node: 'c' } });
    started(s, t);
    expect(nodesOf(t)).toEqual(['c', 'c']);
    const u = pending('u', { placement: { node: 'c' } });
    s.core.onTasks([u]);
    expect(s.rec.take()).toEqual(['notify u AGENT_SCHEDULING']);
    s.core.onReleased([{ uid: 't' }]);
    expect(s.rec.take()).toEqual(['notify u AGENT_EXECUTING_PENDING', 'forward u']);
    expect(nodesOf(u)).toEqual(['c']);
  });

  it('fails at once a task no node may hold, naming the rule and the nodes with their labels', () => {
    const s = pilot();
    const t = pending('t', { placement: { selector: { gpu: 'h100' } } });
    const n = pending('n', { placement: { node: 'z9' } });
    s.core.onTasks([t, n]);
    expect(s.rec.take()).toEqual([
      'notify t AGENT_SCHEDULING, t FAILED, n AGENT_SCHEDULING, n FAILED',
    ]);
    expect(t.reason?.code).toBe('E_NEVER_FITS');
    expect(t.reason?.message).toBe(
      'task must run on labels gpu=h100; no node of the pilot is one: its nodes (labels) are ' +
        'a (disk=hdd), b (disk=nvme,gpu=a100), c (disk=nvme)',
    );
    expect(n.reason?.message).toContain("task must run on node 'z9'");
  });

  it('fails a task whose allowed nodes are too small, naming only those', () => {
    const s = pilot();
    const t = pending('t', { ranks: 5, placement: { selector: { disk: 'nvme' } } });
    s.core.onTasks([t]);
    expect(s.rec.take()).toEqual(['notify t AGENT_SCHEDULING, t FAILED']);
    expect(t.reason?.message).toBe(
      'task asks 5 rank(s) x 1 cores, 0 GPUs, 0 MiB on labels disk=nvme per rank; ' +
        'the pilot has 2 node(s) with 2 cores, 0 GPUs, 8192 MiB, so it can never run',
    );
  });

  it('tries the nodes it prefers first, in order, and goes elsewhere rather than wait', () => {
    const s = setup([node('a', 2), node('b', 2), node('c', 2)]);
    const p1 = pending('p1', { placement: { prefer: ['c', 'b'] } });
    const p2 = pending('p2', { placement: { prefer: ['c', 'b'] } });
    const p3 = pending('p3', { placement: { prefer: ['c', 'b'] } });
    started(s, p1, p2, p3);
    expect([p1, p2, p3].map((t) => nodesOf(t)[0])).toEqual(['c', 'c', 'b']);
    const p4 = pending('p4', { coresPerRank: 2, placement: { prefer: ['c', 'b', 'gone'] } });
    started(s, p4);
    expect(nodesOf(p4)).toEqual(['a']);
  });

  it('lets a task see every GPU of its node while other tasks reserve them', () => {
    const s = setup([node('g', 4, undefined, 2)]);
    const daemon = pending('daemon', { placement: { gpusVisible: true } });
    const a = pending('a', { gpusPerRank: 1 });
    const b = pending('b', { gpusPerRank: 1 });
    started(s, daemon, a, b);
    expect(daemon.slots?.[0]).toEqual({
      node: 'g',
      cores: [0],
      gpus: [0, 1],
      gpusUnreserved: true,
    });
    expect([a, b].map((t) => t.slots?.[0]?.gpus)).toEqual([[0], [1]]);
    // the daemon holds none of them: a third GPU task waits for a or b, not for the daemon
    const c = pending('c', { gpusPerRank: 1 });
    s.core.onTasks([c]);
    expect(s.rec.take()).toEqual(['notify c AGENT_SCHEDULING']);
    s.core.onReleased([{ uid: 'daemon' }]);
    expect(s.rec.take()).toEqual([]);
    s.core.onReleased([{ uid: 'a' }]);
    expect(s.rec.take()).toEqual(['notify c AGENT_EXECUTING_PENDING', 'forward c']);
  });

  it('refuses gpusVisible beside GPUs reserved, saying why', () => {
    const s = setup([node('g', 4, undefined, 2)]);
    const t = pending('t', { gpusPerRank: 1, placement: { gpusVisible: true } });
    s.core.onTasks([t]);
    expect(s.rec.take()).toEqual(['notify t AGENT_SCHEDULING, t FAILED']);
    expect(t.reason?.code).toBe('E_BAD_REQUEST');
    expect(t.reason?.message).toBe(
      'placement.gpusVisible reserves no GPU: gpusPerRank must be 0 (it is 1)',
    );
  });

  it('reserves for a head with a selector only nodes it may use', () => {
    const s = setup([node('a', 2), node('b', 2, { big: 'yes' })]);
    const small = [0, 1, 2, 3].map((i) => pending(`s${i}`));
    started(s, ...small);
    const head = pending('head', {
      coresPerRank: 2,
      priority: 5,
      placement: { selector: { big: 'yes' } },
    });
    s.core.onTasks([head]);
    expect(s.rec.take()).toEqual(['notify head AGENT_SCHEDULING']);
    // node a empties: the head may not use it, so a later task may
    s.core.onReleased([{ uid: small.find((t) => nodesOf(t)[0] === 'a')!.uid }]);
    const later = pending('later');
    s.core.onTasks([later]);
    expect(s.rec.take()).toEqual([
      'notify later AGENT_SCHEDULING, later AGENT_EXECUTING_PENDING',
      'forward later',
    ]);
    expect(nodesOf(later)).toEqual(['a']);
    // node b empties: the head starts there, nothing else takes it first
    for (const t of small.filter((t) => nodesOf(t)[0] === 'b')) s.core.onReleased([{ uid: t.uid }]);
    expect(s.rec.take()).toEqual(['notify head AGENT_EXECUTING_PENDING', 'forward head']);
    expect(nodesOf(head)).toEqual(['b']);
  });
});
