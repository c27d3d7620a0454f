import { describe, expect, it } from '@jest/globals';
import { facts } from '../../../support/facts';
import { AgentOutputStagerCore } from '../../../../src/components/agent-output-stager/core';
import type { StagingStep } from '../../../../src/components/shared/staging-paths';
import type { TaskRecord } from '../../../../src/generated';
import {
  AGENT_SHUTDOWN,
  canceledByUser,
  CoreHarness,
  handOverTests,
  taskRecord,
  uidsLine,
  type TaskOverrides,
} from '../../../support/core-harness';

const CANCELED = canceledByUser('AgentOutputStager');
const PILOT_SB = '/scratch/pilot.1';

function setup() {
  const h = new CoreHarness();
  const steps: { uid: string; steps: StagingStep[] }[] = [];
  const effects = h.effects({
    collect: h.uids('collect'),
    stageOutput: (work: { uid: string; steps: StagingStep[] }[]) => {
      steps.push(...work);
      h.rec.record(uidsLine('stageOutput', work));
    },
    removeIfEmpty: (dirs: string[]) => h.rec.record(`removeIfEmpty ${dirs.join(' ')}`),
  });
  return Object.assign(h, { steps, core: new AgentOutputStagerCore(effects, h.clock, PILOT_SB) });
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
  it("asks to remove a task's own directory if empty, never the pilot's, one it asked for, or one output directives stage from", () => {
    const { rec, core } = setup();
    const own = pending('own');
    const shared = { ...pending('shared'), sandbox: PILOT_SB };
    const asked = pending('asked');
    asked.description = { ...asked.description, sandbox: true };
    // another attempt may come back to the directory of one that failed with retries left
    const mayRetry = { ...pending('retry'), exitCode: 1, description: { retries: 1 } };
    const didRetry = { ...pending('spent'), exitCode: 1, retried: 1, description: { retries: 1 } };
    const ok = { ...pending('ok'), description: { retries: 1 } };
    core.onTasks([own, shared, asked, mayRetry, didRetry, ok]);
    rec.take();
    core.onCollected(['own', 'shared', 'asked', 'retry', 'spent', 'ok'].map((u) => collected(u)));
    expect(rec.take()).toEqual([
      'notify own TMGR_STAGING_OUTPUT_PENDING, shared TMGR_STAGING_OUTPUT_PENDING, asked TMGR_STAGING_OUTPUT_PENDING, retry TMGR_STAGING_OUTPUT_PENDING, spent TMGR_STAGING_OUTPUT_PENDING, ok TMGR_STAGING_OUTPUT_PENDING',
      'forward own, shared, asked, retry, spent, ok',
      'removeIfEmpty /sb/own /sb/spent /sb/ok',
    ]);
    rec.expectNoMore();
  });

  it('takes a task into AGENT_STAGING_OUTPUT and asks for its output to be collected', () => {
    const { rec, noteBase, notes, core } = setup();
    const t = pending('t1');
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t1 AGENT_STAGING_OUTPUT', 'collect t1']);
    expect(t.state).toBe('AGENT_STAGING_OUTPUT');
    expect(notes).toEqual([{ ...noteBase('AgentOutputStager'), state: 'AGENT_STAGING_OUTPUT' }]);
    rec.expectNoMore();
  });

  it('reads no tails of a function task (it writes none): hands it back at once with its result', () => {
    const { rec, notes, core } = setup();
    const t = {
      ...pending('t1'),
      description: { mode: 'function' as const, function: { module: '/m.js' } },
      result: 42,
    };
    core.onTasks([t, pending('t2')]);
    expect(rec.take()).toEqual([
      'notify t1 AGENT_STAGING_OUTPUT, t1 TMGR_STAGING_OUTPUT_PENDING, t2 AGENT_STAGING_OUTPUT',
      'forward t1',
      'removeIfEmpty /sb/t1',
      'collect t2',
    ]);
    expect([t.state, t.stdout, t.stderr]).toEqual(['TMGR_STAGING_OUTPUT_PENDING', '', '']);
    expect(notes.find((n) => n.state === 'TMGR_STAGING_OUTPUT_PENDING')?.detail).toEqual({
      exitCode: 0,
      signal: null,
      stdout: '',
      stderr: '',
      result: 42,
      passed: [12, 0], // its quiet AGENT_STAGING_OUTPUT (code 12), at the same ms
    });
    rec.expectNoMore();
  });

  it('sets stdout and stderr from the collection and hands the task back as TMGR_STAGING_OUTPUT_PENDING', () => {
    const { rec, core } = setup();
    const t = pending('t1');
    core.onTasks([t]);
    rec.take();
    core.onCollected([collected('t1', 'hello\n', 'warning: x\n')]);
    expect(rec.take()).toEqual([
      'notify t1 TMGR_STAGING_OUTPUT_PENDING',
      'forward t1',
      'removeIfEmpty /sb/t1',
    ]);
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
      'removeIfEmpty /sb/t1 /sb/t2',
    ]);
    expect(notes.slice(-2).map(facts)).toEqual([
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
      'removeIfEmpty /sb/c /sb/a',
    ]);
    core.onCollected([collected('b'), collected('nobody')]);
    expect(rec.take()).toEqual([
      'notify b TMGR_STAGING_OUTPUT_PENDING',
      'forward b',
      'removeIfEmpty /sb/b',
    ]);
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
    expect(facts(notes[0])).toEqual({ reason: CANCELED });
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
      'removeIfEmpty /sb/t2',
    ]);
    expect(t.state).toBe('CANCELED');
    expect(t.stdout).toBe('partial\n');
    expect(t.stderr).toBe('err\n');
    expect(facts(notes.find((n) => n.uid === 't1' && n.state === 'CANCELED'))).toEqual({
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
      expect(facts(notes.at(-1))).toEqual({ reason: AGENT_SHUTDOWN });
      expect(gone.state).toBe('TMGR_STAGING_OUTPUT_PENDING');
      core.onCollected([collected('a')]);
      core.onShutdown(final, AGENT_SHUTDOWN);
      rec.expectNoMore();
    },
  );

  describe('output directives', () => {
    const DESCRIPTION = {
      outputStaging: [
        { source: 'task://result.txt', target: 'client://result.txt' },
        { source: 'task://log', target: 'pilot://logs/', action: 'move' as const },
      ],
    };
    const STAGING = {
      input: [],
      output: [
        {
          source: 'task://result.txt',
          target: '/home/u/result.txt',
          action: 'copy' as const,
          optional: false,
        },
        { source: 'task://log', target: 'pilot://logs/', action: 'move' as const, optional: false },
      ],
    };
    function staged(uid: string, overrides: TaskOverrides = {}): TaskRecord {
      return taskRecord(uid, 'AGENT_STAGING_OUTPUT_PENDING', {
        pilot: 'pilot.1',
        sandbox: `/sb/${uid}`,
        exitCode: 0,
        signal: null,
        staging: structuredClone(STAGING),
        description: DESCRIPTION,
        ...overrides,
      });
    }
    const missing = {
      index: 0,
      path: '/sb/t1/result.txt',
      errno: 'ENOENT',
      text: 'no such file or directory',
    };
    const MISSING_MESSAGE =
      'outputStaging[0] (copy task://result.txt -> client://result.txt): /sb/t1/result.txt: no such file or directory (ENOENT)';

    function through(overrides: TaskOverrides = {}) {
      const h = setup();
      const t = staged('t1', overrides);
      h.core.onTasks([t]);
      h.core.onCollected([collected('t1')]);
      return Object.assign(h, { t });
    }

    it('performs them after the tails are read, then hands the task back', () => {
      const { rec, steps, core, t } = through();
      expect(rec.take()).toEqual([
        'notify t1 AGENT_STAGING_OUTPUT',
        'collect t1',
        'stageOutput t1',
      ]);
      expect(steps).toEqual([
        {
          uid: 't1',
          steps: [
            {
              index: 0,
              action: 'copy',
              source: '/sb/t1/result.txt',
              target: '/home/u/result.txt',
              optional: false,
            },
            {
              index: 1,
              action: 'move',
              source: '/sb/t1/log',
              target: '/scratch/pilot.1/logs/',
              optional: false,
            },
          ],
        },
      ]);
      core.onOutputStaged([{ uid: 't1', failures: [] }]);
      expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT_PENDING', 'forward t1']);
      expect(t.stdout).toBe('out of t1\n');
      core.onOutputStaged([{ uid: 't1', failures: [] }]);
      rec.expectNoMore();
    });

    it('fails a task that succeeded in AGENT_STAGING_OUTPUT, naming every failed directive', () => {
      const { rec, notes, core, t } = through();
      rec.take();
      const second = { index: 1, path: '/sb/t1/log', errno: 'EACCES', text: 'permission denied' };
      core.onOutputStaged([{ uid: 't1', failures: [missing, second] }]);
      expect(rec.take()).toEqual(['notify t1 FAILED']);
      const problems = [
        { directive: 0, path: '/sb/t1/result.txt', errno: 'ENOENT', message: MISSING_MESSAGE },
        {
          directive: 1,
          path: '/sb/t1/log',
          errno: 'EACCES',
          message:
            'outputStaging[1] (move task://log -> pilot://logs/): /sb/t1/log: permission denied (EACCES)',
        },
      ];
      const why = {
        code: 'E_STAGING',
        message: `${MISSING_MESSAGE} (and 1 more)`,
        component: 'AgentOutputStager',
        detail: { directive: 0, path: '/sb/t1/result.txt', errno: 'ENOENT', staging: problems },
      };
      expect(t.reason).toEqual(why);
      expect(facts(notes.at(-1))).toEqual({
        exitCode: 0,
        signal: null,
        stdout: 'out of t1\n',
        stderr: '',
        sandbox: '/sb/t1',
        reason: why,
      });
      rec.expectNoMore();
    });

    it('hands back a task that exited non-zero with the failed directives for its reason', () => {
      const { rec, core, t } = through({ exitCode: 3 });
      rec.take();
      core.onOutputStaged([{ uid: 't1', failures: [missing] }]);
      expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT_PENDING', 'forward t1']);
      expect(t.reason).toBeUndefined(); // the ManagerOutputStager words the exit code
      expect(t.staging?.problems).toEqual([
        { directive: 0, path: '/sb/t1/result.txt', errno: 'ENOENT', message: MISSING_MESSAGE },
      ]);
      rec.expectNoMore();
    });

    it('keeps the reason of a task that failed with one, the failed directives in its detail', () => {
      const timeout = {
        code: 'E_TASK_TIMEOUT' as const,
        message: 'task ran longer than timeoutS 1',
        component: 'Executor',
        detail: { timeoutS: 1 },
      };
      const { rec, notes, core, t } = through({
        exitCode: null,
        signal: 'SIGTERM',
        reason: timeout,
      });
      rec.take();
      core.onOutputStaged([{ uid: 't1', failures: [missing] }]);
      expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT_PENDING', 'forward t1']);
      const staging = [
        { directive: 0, path: '/sb/t1/result.txt', errno: 'ENOENT', message: MISSING_MESSAGE },
      ];
      expect(t.reason).toEqual({ ...timeout, detail: { timeoutS: 1, staging } });
      expect(notes.at(-1)?.detail?.reason).toEqual(t.reason);
      rec.expectNoMore();
    });

    it('performs none for a task that never ran', () => {
      const notFound = { code: 'E_EXEC_NOT_FOUND' as const, message: 'x', component: 'Executor' };
      const { rec } = through({ exitCode: null, signal: null, reason: notFound });
      expect(rec.take()).toEqual([
        'notify t1 AGENT_STAGING_OUTPUT',
        'collect t1',
        'notify t1 TMGR_STAGING_OUTPUT_PENDING',
        'forward t1',
      ]);
      rec.expectNoMore();
    });

    it('cancels a task whose cancel came while its directives ran', () => {
      const { rec, notes, core } = through();
      rec.take();
      core.onCancel(['t1']);
      core.onOutputStaged([{ uid: 't1', failures: [] }]);
      expect(rec.take()).toEqual(['notify t1 CANCELED']);
      expect(facts(notes.at(-1))).toEqual({ reason: CANCELED });
      rec.expectNoMore();
    });

    it('ends a task whose directives are running on shutdown, and ignores their late result', () => {
      const { rec, core } = through();
      rec.take();
      core.onShutdown('CANCELED', AGENT_SHUTDOWN);
      expect(rec.take()).toEqual(['notify t1 CANCELED']);
      core.onOutputStaged([{ uid: 't1', failures: [] }]);
      rec.expectNoMore();
    });
  });

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
