import { describe, expect, it } from '@jest/globals';
import {
  AgentSchedulerCore,
  type NodeResources,
} from '../../../../src/components/agent-scheduler/core';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import { CoreHarness, taskRecord } from '../../../support/core-harness';

const NODES: NodeResources[] = [
  { name: 'n0', cores: 2, gpus: 2, memMb: 1_000 },
  { name: 'n1', cores: 2, gpus: 0, memMb: 1_000 },
];

function arriving(uid: string, d: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'AGENT_SCHEDULING_PENDING', {
    description: { executable: '/bin/true', ...d },
  });
}

/** A task the agent before this one had placed and handed to the Executor. */
function running(
  uid: string,
  slots: NonNullable<TaskRecord['slots']>,
  d: Partial<TaskDescription> = {},
): TaskRecord {
  return taskRecord(uid, 'AGENT_EXECUTING', {
    slots,
    description: { executable: '/bin/true', ...d },
  });
}

function setup() {
  const h = new CoreHarness();
  const placed: TaskRecord[] = [];
  const core = new AgentSchedulerCore(
    h.effects({ forward: (ts: TaskRecord[]) => void placed.push(...ts) }),
    h.clock,
    NODES,
  );
  return { core, placed };
}

describe('AgentSchedulerCore.adopt (an agent started again)', () => {
  it('takes the slots its running tasks hold, so nothing is placed over them until they end', () => {
    const { core, placed } = setup();
    core.adopt([
      running('a', [{ node: 'n0', cores: [1], gpus: [0], memMb: 600 }], {
        gpusPerRank: 1,
        memPerRankMb: 600,
      }),
      running(
        'b',
        [
          { node: 'n1', cores: [0], gpus: [] },
          { node: 'n1', cores: [1], gpus: [] },
        ],
        { ranks: 2 },
      ),
    ]);
    expect(core.freeCapacity()).toEqual([
      { node: 'n0', cores: 1, gpuFree: [0, 1_000], memMb: 400 }, // GPUs in thousandths
      { node: 'n1', cores: 0, gpuFree: [], memMb: 1_000 },
    ]);
    core.onTasks([arriving('c'), arriving('d', { gpusPerRank: 1 }), arriving('e')]);
    // one core is free: on n0, the one the task before did not hold, with the other GPU
    expect(placed.map((t) => [t.uid, t.slots])).toEqual([
      ['c', [{ node: 'n0', cores: [0], gpus: [] }]],
    ]);
    core.onReleased([{ uid: 'a' }]);
    expect(placed.map((t) => [t.uid, t.slots?.[0]?.cores, t.slots?.[0]?.gpus])).toEqual([
      ['c', [0], []],
      ['d', [1], [0]],
    ]);
    core.onReleased([{ uid: 'b' }]);
    expect(placed.map((t) => t.uid)).toEqual(['c', 'd', 'e']);
  });

  it('takes nothing for a task whose slots name no node of this pilot', () => {
    const { core } = setup();
    core.adopt([running('x', [{ node: 'elsewhere', cores: [0], gpus: [] }])]);
    expect(core.freeCapacity().map((n) => n.cores)).toEqual([2, 2]);
  });
});
