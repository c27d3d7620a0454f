import { describe, expect, it } from '@jest/globals';
import {
  AgentSchedulerCore,
  type NodeResources,
} from '../../../../src/components/agent-scheduler/core';
import { requestOf } from '../../../../src/components/agent-scheduler/request';
import {
  WAIT_REPORT_MS,
  type ShapeWait,
} from '../../../../src/components/agent-scheduler/wait-reports';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import { AGENT_SHUTDOWN, CoreHarness, taskRecord } from '../../../support/core-harness';

function node(name: string, cores: number, gpus = 0, memMb = 8_192): NodeResources {
  return { name, cores, gpus, memMb };
}

/** A scheduler whose waiting reports are recorded as `waits <shape task: kind>` lines. */
function setup(nodes: readonly NodeResources[] = [node('n0', 4)]) {
  const h = new CoreHarness();
  const reports: ShapeWait[][] = [];
  const reportWaits = (ws: ShapeWait[]): void => {
    reports.push(ws);
    h.rec.record(
      `waits ${ws.map((w) => `${w.task ?? '-'}:${w.reason?.kind ?? 'gone'}`).join(', ')}`,
    );
  };
  const core = new AgentSchedulerCore(h.effects({ reportWaits }), h.clock, [...nodes]);
  /** Takes tasks in, drops the notify/forward lines, and returns what went to the Executor. */
  const submit = (...tasks: TaskRecord[]): string[] => {
    core.onTasks(tasks);
    return forwarded(h.rec.take());
  };
  const release = (...uids: string[]): string[] => {
    core.onReleased(uids.map((uid) => ({ uid })));
    return forwarded(h.rec.take());
  };
  /** Lets the report timer fire and returns the last report's entries. */
  const report = (): ShapeWait[] => {
    h.clock.advance(WAIT_REPORT_MS);
    return reports.at(-1) ?? [];
  };
  return Object.assign(h, { core, reports, submit, release, report });
}

function forwarded(lines: string[]): string[] {
  return lines.filter((l) => l.startsWith('forward ')).flatMap((l) => l.slice(8).split(', '));
}

function pending(uid: string, description: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'AGENT_SCHEDULING_PENDING', { description });
}

const keyOf = (d: TaskDescription): string => (requestOf(d) as { key: string }).key;

describe('AgentSchedulerCore: waiting reasons', () => {
  it('a task placed at once arms no report and costs no reason', () => {
    const s = setup();
    expect(s.submit(pending('a'), pending('b'))).toEqual(['a', 'b']);
    expect(s.clock.pending()).toBe(0);
    s.release('a', 'b');
    expect(s.clock.pending()).toBe(0);
    s.expectNoMore();
  });

  it('resources: names what the task asks and the node with the most free now', () => {
    const s = setup([node('n0', 4), node('n1', 4)]);
    s.submit(pending('a', { coresPerRank: 3 }), pending('b', { coresPerRank: 2 }));
    expect(s.submit(pending('c', { coresPerRank: 4 }))).toEqual([]);
    const at = s.clock.now(); // the first report after a quiet spell comes at once
    const [w] = s.report();
    expect(s.rec.take()).toEqual(['waits c:resources']);
    expect(w).toMatchObject({ shape: keyOf({ coresPerRank: 4 }), task: 'c', attempt: 1 });
    expect(w!.reason).toMatchObject({
      kind: 'resources',
      component: 'AgentScheduler',
      ts: at,
      asks: { ranks: 1, cores: 4, gpus: 0, memMb: 0 },
      largestFree: { node: 'n1', cores: 2, gpus: 0, memMb: 8_192 },
    });
    expect(w!.reason!.message).toBe(
      'waiting for 1 rank(s) x 4 cores, 0 GPUs, 0 MiB on one node: the most free now is node ' +
        'n1 with 2 cores, 0 GPUs, 8192 MiB free; node(s) n1 are held for it (first in line)',
    );
    s.expectNoMore();
  });

  it('reservation: a later task that would fit waits behind the task the node is held for', () => {
    const s = setup();
    s.submit(pending('a'));
    expect(s.submit(pending('big', { coresPerRank: 4 }), pending('small'))).toEqual([]);
    const ws = s.report();
    expect(s.rec.take()).toEqual(['waits big:resources, small:reservation']);
    expect(ws[1]!.reason).toMatchObject({ kind: 'reservation', behind: 'big', nodes: ['n0'] });
    expect(ws[1]!.reason!.message).toContain('waiting behind task big: node(s) n0 are held');
    s.expectNoMore();
  });

  it('exclusive tag: a plain task kept off the tag’s node names the tag and its holder', () => {
    const s = setup();
    s.submit(pending('x1', { tags: { exclusive: 'x' } }));
    expect(s.submit(pending('plain'))).toEqual([]);
    const [w] = s.report();
    expect(s.rec.take()).toEqual(['waits plain:tag']);
    expect(w!.reason).toMatchObject({ tag: { exclusive: 'x' }, holders: ['x1'], nodes: ['n0'] });
    expect(w!.reason!.message).toBe(
      "held by exclusive tag 'x': node(s) n0 run only tasks of that tag now (x1)",
    );
    s.expectNoMore();
  });

  it('an exclusive task waits for a node with nothing else on it', () => {
    const s = setup();
    s.submit(pending('a'));
    expect(s.submit(pending('x1', { tags: { exclusive: 'x' } }))).toEqual([]);
    const [w] = s.report();
    expect(s.rec.take()).toEqual(['waits x1:resources']);
    expect(w!.reason!.message).toContain("on a node with nothing else on it (exclusive tag 'x')");
    s.expectNoMore();
  });

  it('colocate tag: a task bound to its group’s full node names tag, node and holder', () => {
    const s = setup([node('n0', 2), node('n1', 2)]);
    expect(s.submit(pending('g1', { tags: { colocate: 'g' } }))).toEqual(['g1']);
    const bound = s.core.freeCapacity().find((n) => n.cores === 1)!.node;
    s.submit(pending('fill'));
    expect(s.core.freeCapacity().find((n) => n.node === bound)!.cores).toBe(0);
    expect(s.submit(pending('g2', { tags: { colocate: 'g' } }))).toEqual([]);
    const [w] = s.report();
    expect(s.rec.take()).toEqual(['waits g2:tag']);
    expect(w!.reason).toMatchObject({
      kind: 'tag',
      tag: { colocate: 'g' },
      holders: ['g1'],
      nodes: [bound],
      largestFree: { node: bound, cores: 0 },
    });
    s.expectNoMore();
  });

  it('sends at most one report per interval, in one bulk, and only reasons that changed', () => {
    const s = setup();
    s.submit(pending('a', { coresPerRank: 3 }));
    s.submit(pending('b', { coresPerRank: 2 }));
    s.clock.advance(0); // the first report after a quiet spell comes at once
    expect(s.rec.take()).toEqual(['waits b:resources']);
    // more of the same shape, and another shape, within the interval: one report at its end
    s.submit(pending('b2', { coresPerRank: 2 }), pending('c', { coresPerRank: 4 }));
    s.clock.advance(WAIT_REPORT_MS - 1);
    s.expectNoMore();
    s.clock.advance(1);
    // b's reason did not change; c waits behind b, the first in line
    expect(s.rec.take()).toEqual(['waits c:reservation']);
    s.clock.advance(10 * WAIT_REPORT_MS);
    s.expectNoMore();
  });

  it('capacity that moves refreshes the largest free of reasons sent', () => {
    const s = setup();
    s.submit(pending('a', { coresPerRank: 2 }), pending('b'));
    s.submit(pending('big', { coresPerRank: 4 }));
    expect(s.report()[0]!.reason!.largestFree).toMatchObject({ cores: 1 });
    s.rec.take();
    s.release('b');
    expect(s.report()[0]!.reason!.largestFree).toMatchObject({ cores: 2 });
    expect(s.rec.take()).toEqual(['waits big:resources']);
    s.expectNoMore();
  });

  it('drops the reason once no task of the shape waits (started, or canceled): no stale reason', () => {
    const s = setup();
    s.submit(pending('a', { coresPerRank: 4 }));
    s.submit(pending('b', { coresPerRank: 4 }), pending('c', { coresPerRank: 2 }));
    s.report();
    expect(s.rec.take()).toEqual(['waits b:resources, c:reservation']);
    expect(s.release('a')).toEqual(['b']);
    const ws = s.report();
    expect(s.rec.take()).toEqual(['waits -:gone, c:resources']);
    expect(ws[0]).toEqual({ shape: keyOf({ coresPerRank: 4 }) });
    s.core.onCancel(['c']);
    expect(s.rec.take()).toEqual(['notify c CANCELED']);
    expect(s.report()).toEqual([{ shape: keyOf({ coresPerRank: 2 }) }]);
    expect(s.rec.take()).toEqual(['waits -:gone']);
    s.expectNoMore();
  });

  it('names the next task of the shape once the first is canceled', () => {
    const s = setup();
    s.submit(pending('a', { coresPerRank: 4 }));
    s.submit(pending('b', { coresPerRank: 4 }), pending('b2', { coresPerRank: 4 }));
    s.report();
    expect(s.rec.take()).toEqual(['waits b:resources']);
    s.core.onCancel(['b']);
    s.rec.take();
    s.report();
    expect(s.rec.take()).toEqual(['waits b2:resources']);
    s.expectNoMore();
  });

  it('100,000 waiting tasks of one shape make one reason, sent once', () => {
    const s = setup([node('n0', 1)]);
    s.submit(pending('run'));
    for (let i = 0; i < 100_000; i += 5_000) {
      s.submit(...Array.from({ length: 5_000 }, (_, k) => pending(`w${i + k}`)));
    }
    expect(s.report()).toHaveLength(1);
    expect(s.rec.take()).toEqual(['waits w0:resources']);
    // each start moves capacity; the reason of the shape changes only in its first task's name
    expect(s.release('run')).toEqual(['w0']);
    s.report();
    expect(s.rec.take()).toEqual(['waits w1:resources']);
    s.expectNoMore();
  });

  it('sends every reason again to a client that resumed, and none after a shutdown', () => {
    const s = setup();
    s.submit(pending('a', { coresPerRank: 4 }));
    s.submit(pending('b'));
    s.report();
    expect(s.rec.take()).toEqual(['waits b:resources']);
    s.core.onWaitsResend();
    s.report();
    expect(s.rec.take()).toEqual(['waits b:resources']);
    s.core.onShutdown('FAILED', AGENT_SHUTDOWN);
    expect(s.rec.take()).toEqual(['notify b FAILED']);
    s.release('a');
    s.clock.advance(10 * WAIT_REPORT_MS);
    s.expectNoMore();
  });
});
