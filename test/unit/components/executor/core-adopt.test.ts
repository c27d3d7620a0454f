import { describe, expect, it } from '@jest/globals';
import { ExecutorCore } from '../../../../src/components/executor/core';
import type { ExecutorJob } from '../../../../src/components/executor/effects';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import { CoreHarness, taskRecord } from '../../../support/core-harness';

/** A task as the journal of the agent before kept it: handed to the Executor, on node n0. */
function journalled(uid: string, desc: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'AGENT_EXECUTING_PENDING', {
    session: 'sess.1',
    pilot: 'pilot.1',
    sandbox: `/sb/${uid}`,
    slots: [{ node: 'n0', cores: [0], gpus: [] }],
    description: { executable: '/bin/sleep', arguments: ['60'], ...desc },
  });
}

function setup(subAgentNodes?: string[]) {
  const h = new CoreHarness();
  const effects = h.effects({
    forward: (ts: TaskRecord[]) =>
      h.rec.record(
        `forward ${ts.map((t) => `${t.uid} ${t.state} ${t.reason?.code ?? ''}`).join(', ')}`,
      ),
    release: h.uids('release'),
    start: (job: ExecutorJob) => h.rec.record(`start ${job.kind}`),
    stop: (uid: string, how: string) => h.rec.record(`stop ${uid} ${how}`),
    signal: (uid: string, signal: string) => h.rec.record(`signal ${uid} ${signal}`),
  });
  const launch = subAgentNodes === undefined ? {} : { subAgentNodes: new Set(subAgentNodes) };
  const core = new ExecutorCore(effects, h.clock, { killGraceMs: 1_000, launch });
  return Object.assign(h, { core });
}

describe('ExecutorCore.adopt (an agent started again)', () => {
  it("holds a sub-agent's job again without starting it; ends the ones that died with the agent", () => {
    const { rec, core, clock } = setup(['n0']);
    const since = clock.now() - 2_000;
    const runs = journalled('runs');
    const call = journalled('call', { mode: 'function', function: { module: 'm' } });
    delete (call.description as { executable?: string }).executable;
    const { kept, lost } = core.adopt([
      { task: runs, since },
      { task: call, since },
    ]);
    expect(kept.map((j) => (j.kind === 'process' ? [j.spec.uid, j.node] : j.kind))).toEqual([
      ['runs', 'n0'],
    ]);
    expect(lost.map((j) => j.kind)).toEqual(['function']);
    const first = rec.take();
    expect(first.some((e) => e.startsWith('start'))).toBe(false); // nothing is started again
    expect(first).toContain('forward call AGENT_STAGING_OUTPUT_PENDING E_AGENT_DIED');
    expect(first).toContain('release call');
    expect(core.running()).toBe(1);
    expect(runs.state).toBe('AGENT_EXECUTING');
    // its end comes from its sub-agent, once
    core.onExited('runs', { exitCode: 0, signal: null });
    core.onExited('runs', { exitCode: 0, signal: null });
    const end = rec.take();
    expect(end).toContain('forward runs AGENT_STAGING_OUTPUT_PENDING ');
    expect(end.filter((e) => e.startsWith('forward'))).toHaveLength(1);
    expect(core.held()).toBe(0);
  });

  it("counts an adopted task's timeoutS from when the agent before handed it over", () => {
    const { rec, core, clock } = setup(['n0']);
    core.adopt([{ task: journalled('t', { timeoutS: 5 }), since: clock.now() - 3_000 }]);
    rec.take();
    clock.advance(1_999);
    expect(rec.take()).toEqual([]);
    clock.advance(1);
    expect(rec.take()).toEqual(['stop t term']);
  });

  it('without sub-agents every job died with the agent: E_AGENT_DIED, on to output staging', () => {
    const { rec, core, clock } = setup();
    const { kept, lost } = core.adopt([{ task: journalled('p'), since: clock.now() }]);
    expect([kept.length, lost.length]).toEqual([0, 1]);
    const out = rec.take();
    expect(out).toContain('forward p AGENT_STAGING_OUTPUT_PENDING E_AGENT_DIED');
    expect(core.held()).toBe(0);
  });
});
