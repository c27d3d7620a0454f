import { describe, expect, it } from '@jest/globals';
import {
  AgentSchedulerCore,
  type NodeResources,
} from '../../../../src/components/agent-scheduler/core';
import type { Reason, TaskDescription, TaskRecord } from '../../../../src/generated';
import { AGENT_SHUTDOWN, CoreHarness, taskRecord } from '../../../support/core-harness';

const node: NodeResources = { name: 'n0', cores: 2, gpus: 0, memMb: 8_192 };

/** A 2-core scheduler that drains 100 s in, recording what it gives back. */
function setup(returns = true) {
  const h = new CoreHarness();
  const t0 = h.clock.now();
  const returned: { uids: string[]; why: Reason }[] = [];
  const returnTasks = (ts: TaskRecord[], why: Reason): void => {
    returned.push({ uids: ts.map((t) => t.uid), why });
    h.rec.record(`return ${ts.map((t) => t.uid).join(', ')}`);
  };
  const core = new AgentSchedulerCore(h.effects(returns ? { returnTasks } : {}), h.clock, [node]);
  core.setDrainPoint(t0 + 100_000);
  const submit = (...tasks: TaskRecord[]): void => core.onTasks(tasks);
  return Object.assign(h, { core, returned, submit, t0 });
}

function pending(uid: string, d: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'AGENT_SCHEDULING_PENDING', { description: d });
}

/** The lines that say what was forwarded or given back. */
const moves = (lines: string[]): string[] =>
  lines.filter((l) => l.startsWith('forward ') || l.startsWith('return '));

describe('AgentSchedulerCore: the drain point', () => {
  it('a task whose walltimeS would pass the drain point is given back, not started', () => {
    const s = setup();
    s.submit(pending('a', { walltimeS: 50 }), pending('late', { walltimeS: 101 }));
    expect(moves(s.rec.take())).toEqual(['forward a', 'return late']);
    expect(s.returned[0]!.why).toMatchObject({
      code: 'E_PILOT_DRAINS',
      component: 'AgentScheduler',
      detail: { drainsInS: 100 },
    });
    expect(s.returned[0]!.why.message).toBe(
      'the pilot drains in 100 s, before the walltimeS of these tasks would end: they go back to start on another pilot (no retry used)',
    );
    expect(s.core.queued).toBe(1); // kept until the end, in case the hand-back was lost
  });

  it('a task deep in a blocked queue is given back at its latest start, not when it is tried', () => {
    const s = setup();
    s.submit(
      pending('r0', { walltimeS: 90 }),
      pending('r1', { walltimeS: 90 }),
      pending('w1', { walltimeS: 20 }),
      pending('w2', { walltimeS: 40 }),
      pending('w3'),
    );
    expect(moves(s.rec.take())).toEqual(['forward r0, r1']);
    // w2 can start until 60 s in, w1 until 80 s in: each goes back just after
    s.clock.advance(60_000);
    expect(moves(s.rec.take())).toEqual([]);
    s.clock.advance(1);
    expect(moves(s.rec.take())).toEqual(['return w2']);
    s.clock.advance(20_000);
    expect(moves(s.rec.take())).toEqual(['return w1']);
    // w3 declares no walltimeS: it waits, and starts when a core comes back
    s.core.onReleased([{ uid: 'r0' }]);
    expect(moves(s.rec.take())).toEqual(['forward w3']);
  });

  it('a task that started before its latest start is not given back', () => {
    const s = setup();
    s.submit(pending('r0', { walltimeS: 10 }), pending('r1', { walltimeS: 10 }));
    s.submit(pending('w1', { walltimeS: 50 }));
    s.clock.advance(20_000);
    s.core.onReleased([{ uid: 'r0' }]);
    expect(moves(s.rec.take())).toEqual(['forward r0, r1', 'forward w1']);
    s.clock.advance(60_000);
    expect(moves(s.rec.take())).toEqual([]);
  });

  it('past the drain point nothing starts, and nothing is given back before the end', () => {
    const s = setup();
    s.submit(pending('r0'), pending('r1'), pending('w1', { walltimeS: 30 }), pending('w2'));
    s.rec.take();
    s.clock.advance(50_000);
    s.core.onDrain();
    s.core.onReleased([{ uid: 'r0' }, { uid: 'r1' }]);
    s.clock.advance(30_000);
    expect(moves(s.rec.take())).toEqual([]);
    s.core.onShutdown('FAILED', AGENT_SHUTDOWN, true);
    expect(s.rec.take()).toEqual([]); // left to the client, which starts them elsewhere
  });

  it('a stranded task can still be canceled; without returnTasks it waits for the end', () => {
    const s = setup(false);
    s.submit(pending('r0'), pending('r1'), pending('late', { walltimeS: 200 }));
    expect(moves(s.rec.take())).toEqual(['forward r0, r1']);
    expect(s.core.queued).toBe(1);
    s.core.onCancel(['late']);
    expect(s.rec.take()).toEqual(['notify late CANCELED']);
    expect(s.core.queued).toBe(0);
  });
});
