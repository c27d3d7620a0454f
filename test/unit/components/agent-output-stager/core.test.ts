import { describe, expect, it } from '@jest/globals';
import { AgentOutputStagerCore } from '../../../../src/components/agent-output-stager/core';
import type { TaskRecord } from '../../../../src/generated';
import {
  AGENT_SHUTDOWN,
  canceledByUser,
  CoreHarness,
  handOverTests,
  taskRecord,
} from '../../../support/core-harness';

const CANCELED = canceledByUser('AgentOutputStager');

function setup() {
  const h = new CoreHarness();
  const effects = h.effects({ collect: h.uids('collect') });
  return Object.assign(h, { core: new AgentOutputStagerCore(effects, h.clock) });
}

function pending(uid: string): TaskRecord {
  return taskRecord(uid, 'AGENT_STAGING_OUTPUT_PENDING', {
    pilot: 'pilot.1',
    sandbox: `/sb/${uid}`,
    exitCode: 0,
    signal: null,
  });
}

function collected(uid: string, stdout = `out of ${uid}\n`, stderr = '') {
  return { uid, stdout, stderr };
}

describe('AgentOutputStagerCore', () => {
  it('takes a task into AGENT_STAGING_OUTPUT and asks for its output to be collected', () => {
    const { rec, noteBase, notes, core } = setup();
    const t = pending('t1');
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t1 AGENT_STAGING_OUTPUT', 'collect t1']);
    expect(t.state).toBe('AGENT_STAGING_OUTPUT');
    expect(notes).toEqual([{ ...noteBase('AgentOutputStager'), state: 'AGENT_STAGING_OUTPUT' }]);
    rec.expectNoMore();
  });

  it('sets stdout and stderr from the collection and hands the task back as TMGR_STAGING_OUTPUT_PENDING', () => {
    const { rec, core } = setup();
    const t = pending('t1');
    core.onTasks([t]);
    rec.take();
    core.onCollected([collected('t1', 'hello\n', 'warning: x\n')]);
    expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT_PENDING', 'forward t1']);
    expect(t.state).toBe('TMGR_STAGING_OUTPUT_PENDING');
    expect(t.stdout).toBe('hello\n');
    expect(t.stderr).toBe('warning: x\n');
    expect(t.exitCode).toBe(0);
    core.onCollected([collected('t1')]); // a repeat: already handed on
    expect(t.stdout).toBe('hello\n');
    rec.expectNoMore();
  });

  it('puts in the hand-back notification what the client needs to end the task, the reason too', () => {
    const { rec, notes, core } = setup();
    const why = { code: 'E_TASK_TIMEOUT' as const, message: 'too long', component: 'Executor' };
    const t = { ...pending('t1'), exitCode: null, signal: 'SIGTERM', reason: why };
    core.onTasks([t, pending('t2')]);
    rec.take();
    core.onCollected([collected('t1', 'o\n', 'e\n'), collected('t2')]);
    expect(rec.take()).toEqual([
      'notify t1 TMGR_STAGING_OUTPUT_PENDING, t2 TMGR_STAGING_OUTPUT_PENDING',
      'forward t1, t2',
    ]);
    expect(notes.slice(-2).map((n) => n.detail)).toEqual([
      { exitCode: null, signal: 'SIGTERM', stdout: 'o\n', stderr: 'e\n', reason: why },
      { exitCode: 0, signal: null, stdout: 'out of t2\n', stderr: '' },
    ]);
    rec.expectNoMore();
  });

  it('collects a bulk in one call and hands it back in one notify and one forward', () => {
    const { rec, core } = setup();
    core.onTasks([pending('a'), pending('b'), pending('c')]);
    expect(rec.take()).toEqual([
      'notify a AGENT_STAGING_OUTPUT, b AGENT_STAGING_OUTPUT, c AGENT_STAGING_OUTPUT',
      'collect a, b, c',
    ]);
    core.onCollected([collected('c'), collected('a')]);
    expect(rec.take()).toEqual([
      'notify c TMGR_STAGING_OUTPUT_PENDING, a TMGR_STAGING_OUTPUT_PENDING',
      'forward c, a',
    ]);
    core.onCollected([collected('b'), collected('nobody')]);
    expect(rec.take()).toEqual(['notify b TMGR_STAGING_OUTPUT_PENDING', 'forward b']);
    rec.expectNoMore();
  });

  it('cancels a task on receipt when its cancel came first, without collecting', () => {
    const { rec, notes, core } = setup();
    core.onCancel(['t1']);
    rec.expectNoMore();
    const t = pending('t1');
    core.onTasks([t, pending('t2')]);
    expect(rec.take()).toEqual(['notify t1 CANCELED, t2 AGENT_STAGING_OUTPUT', 'collect t2']);
    expect(t.state).toBe('CANCELED');
    expect(notes[0]?.detail).toEqual({ reason: CANCELED });
    rec.expectNoMore();
  });

  it('cancels a task during collection once collected, keeping its output, and does not hand it on', () => {
    const { rec, notes, core } = setup();
    const t = pending('t1');
    core.onTasks([t, pending('t2')]);
    rec.take();
    core.onCancel(['t1']);
    rec.expectNoMore();
    core.onCollected([collected('t1', 'partial\n', 'err\n'), collected('t2')]);
    expect(rec.take()).toEqual([
      'notify t1 CANCELED, t2 TMGR_STAGING_OUTPUT_PENDING',
      'forward t2',
    ]);
    expect(t.state).toBe('CANCELED');
    expect(t.stdout).toBe('partial\n');
    expect(t.stderr).toBe('err\n');
    expect(notes.find((n) => n.uid === 't1' && n.state === 'CANCELED')?.detail).toEqual({
      reason: CANCELED,
    });
    rec.expectNoMore();
  });

  it('does nothing on a cancel for a task it has already handed on', () => {
    const { rec, core } = setup();
    const t = pending('t1');
    core.onTasks([t]);
    core.onCollected([collected('t1')]);
    rec.take();
    core.onCancel(['t1']);
    expect(t.state).toBe('TMGR_STAGING_OUTPUT_PENDING');
    rec.expectNoMore();
  });

  it.each(['FAILED', 'CANCELED'] as const)(
    'ends every task being collected %s on shutdown and ignores late results',
    (final) => {
      const { rec, notes, core } = setup();
      const a = pending('a');
      const gone = pending('gone');
      core.onTasks([a, gone]);
      core.onCollected([collected('gone')]);
      rec.take();
      core.onShutdown(final, AGENT_SHUTDOWN);
      expect(rec.take()).toEqual([`notify a ${final}`]);
      expect(a.state).toBe(final);
      expect(notes.at(-1)?.detail).toEqual({ reason: AGENT_SHUTDOWN });
      expect(gone.state).toBe('TMGR_STAGING_OUTPUT_PENDING');
      core.onCollected([collected('a')]);
      core.onShutdown(final, AGENT_SHUTDOWN);
      rec.expectNoMore();
    },
  );

  describe('hand-over', () => {
    handOverTests({
      from: 'AGENT_STAGING_OUTPUT_PENDING',
      setup,
      pending,
      finish: (s) => s.core.onCollected([collected('t1')]),
      walk: ['AGENT_STAGING_OUTPUT', 'TMGR_STAGING_OUTPUT_PENDING'],
      bulk: {
        wrong: 'AGENT_EXECUTING',
        after: (s, ok) => {
          s.core.onCollected([collected('ok')]); // it was never taken in
          expect(ok.stdout).toBeUndefined();
          s.core.onShutdown('FAILED', AGENT_SHUTDOWN);
        },
      },
    });
  });
});
