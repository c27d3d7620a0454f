import { describe, expect, it } from '@jest/globals';
import { STATE_CODES } from '../../../../src/states/state-codes';
import { facts } from '../../../support/facts';
import { ManagerOutputStagerCore } from '../../../../src/components/manager-output-stager/core';
import type { Reason, TaskRecord } from '../../../../src/generated';
import {
  canceledByUser,
  CoreHarness,
  handOverTests,
  taskIn,
  taskRecord,
  type TaskOverrides,
} from '../../../support/core-harness';

function setup() {
  const h = new CoreHarness();
  const retry = (ts: TaskRecord[]): void =>
    h.rec.record(`retry ${ts.map((t) => `${t.uid}#${t.attempt}/${t.retried}`).join(', ')}`);
  return Object.assign(h, {
    core: new ManagerOutputStagerCore({ notify: h.notify, retry }, h.clock),
  });
}

/** A task back from its pilot, as the AgentOutputStager hands it on. */
function back(uid: string, overrides: TaskOverrides = {}): TaskRecord {
  return taskRecord(uid, 'TMGR_STAGING_OUTPUT_PENDING', {
    pilot: 'p1',
    sandbox: `/sb/p1/${uid}`,
    exitCode: 0,
    signal: null,
    stdout: 'hello\n',
    stderr: '',
    ...overrides,
  });
}

const OUTPUT = { pilot: 'p1', sandbox: '/sb/p1/t1', stdout: 'hello\n' };

describe('ManagerOutputStagerCore', () => {
  it('ends a task that exited 0 DONE, with exit code, output, pilot and sandbox in the notification', () => {
    const { rec, noteBase, notes, core } = setup();
    const t = back('t1', { stderr: 'note\n' });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT, t1 DONE']);
    expect(t.state).toBe('DONE');
    expect(t.reason).toBeUndefined();
    const base = noteBase('ManagerOutputStager');
    expect(notes).toEqual([
      { ...base, state: 'TMGR_STAGING_OUTPUT' },
      {
        ...base,
        state: 'DONE',
        detail: {
          exitCode: 0,
          signal: null,
          stdout: 'hello\n',
          stderr: 'note\n',
          pilot: 'p1',
          sandbox: '/sb/p1/t1',
          // TMGR_STAGING_OUTPUT is quiet (no directives): its time rides on DONE
          passed: [STATE_CODES.indexOf('TMGR_STAGING_OUTPUT'), 0],
        },
      },
    ]);
    rec.expectNoMore();
  });

  it.each(['files', 'stream'] as const)(
    "says where an output '%s' task's output went on its final state",
    (output) => {
      const { notes, core } = setup();
      core.onTasks([back('t1', { output })]);
      // the agent's own note of it may be read after this one
      expect(facts(notes.at(-1))).toMatchObject({ output });
    },
  );

  it("names the node its attempt ran on in its final state (the agent's note of its slots may come later)", () => {
    const { notes, core } = setup();
    const slots = [
      { node: 'n7', cores: [0, 1], gpus: [] },
      { node: 'n8', cores: [0], gpus: [] },
    ];
    core.onTasks([back('t1', { slots })]);
    expect(facts(notes.at(-1))).toMatchObject({ node: 'n7' });
  });

  it('leaves pilot and sandbox out of the detail when the task has none', () => {
    const { rec, notes, core } = setup();
    const t = taskIn('TMGR_STAGING_OUTPUT_PENDING', { exitCode: 0, signal: null });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT, t1 DONE']);
    expect(facts(notes.at(-1))).toEqual({ exitCode: 0, signal: null, stdout: '', stderr: '' });
    rec.expectNoMore();
  });

  it.each<[string, string, string]>([
    [
      'a multi-line stderr',
      'starting\nloading data\nerror: file missing\n',
      'task exited with code 3: error: file missing',
    ],
    ['a stderr with trailing blank lines', 'boom\n\n\n', 'task exited with code 3: boom'],
    ['an empty stderr', '', 'task exited with code 3'],
  ])(
    'fails a non-zero exit with the code and the last stderr line (%s)',
    (_what, stderr, message) => {
      const { rec, notes, core } = setup();
      const t = back('t1', { exitCode: 3, stderr });
      core.onTasks([t]);
      expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT, t1 FAILED']);
      expect(t.state).toBe('FAILED');
      const why = {
        code: 'E_EXIT_CODE',
        message,
        component: 'ManagerOutputStager',
        detail: { exitCode: 3 },
      };
      expect(facts(notes.at(-1))).toEqual({
        ...OUTPUT,
        exitCode: 3,
        signal: null,
        stderr,
        reason: why,
      });
      rec.expectNoMore();
    },
  );

  it('fails a task killed by a signal with E_SIGNALED naming it', () => {
    const { rec, notes, core } = setup();
    core.onTasks([back('t1', { exitCode: null, signal: 'SIGKILL' })]);
    expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT, t1 FAILED']);
    expect(facts(notes.at(-1))).toEqual({
      ...OUTPUT,
      exitCode: null,
      signal: 'SIGKILL',
      stderr: '',
      reason: {
        code: 'E_SIGNALED',
        message: 'task was killed by SIGKILL',
        component: 'ManagerOutputStager',
        detail: { signal: 'SIGKILL' },
      },
    });
    rec.expectNoMore();
  });

  it('adds the output directives that failed at the agent to the exit code reason', () => {
    const { rec, notes, core } = setup();
    const problem = { directive: 0, path: '/sb/p1/t1/r', errno: 'ENOENT', message: 'gone' };
    const t = back('t1', {
      exitCode: 2,
      staging: { input: [], output: [], problems: [problem] },
    });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT, t1 FAILED']);
    expect(notes.at(-1)?.detail?.reason).toEqual({
      code: 'E_EXIT_CODE',
      message: 'task exited with code 2',
      component: 'ManagerOutputStager',
      detail: { exitCode: 2, staging: [problem] },
    });
    rec.expectNoMore();
  });

  it.each<[string, TaskOverrides, Reason]>([
    [
      'a timeout',
      { exitCode: null, signal: 'SIGTERM' },
      {
        code: 'E_TASK_TIMEOUT',
        message: 'task ran longer than timeoutS 2',
        component: 'Executor',
        detail: { timeoutS: 2 },
      },
    ],
    [
      'an executable not found',
      { exitCode: null, signal: null },
      {
        code: 'E_EXEC_NOT_FOUND',
        message: "cannot execute '/no/such': no such file or directory (ENOENT)",
        component: 'Executor',
        detail: { errno: 'ENOENT' },
      },
    ],
    [
      'a reason on a task that exited 0',
      { exitCode: 0, signal: null },
      { code: 'E_STAGING', message: 'output staging failed', component: 'AgentOutputStager' },
    ],
  ])(
    'fails a task that comes back with a reason already set (%s) and keeps that reason',
    (_what, exit, why) => {
      const { rec, notes, core } = setup();
      const t = back('t1', { ...exit, reason: why });
      core.onTasks([t]);
      expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT, t1 FAILED']);
      expect(t.reason).toEqual(why);
      expect(facts(notes.at(-1))).toEqual({ ...OUTPUT, stderr: '', ...exit, reason: why });
      rec.expectNoMore();
    },
  );

  it.each<[string, TaskOverrides]>([
    ['exitCode null', { exitCode: null, signal: null }],
    ['no exitCode at all', {}],
  ])('fails a task that ended without an exit code (%s)', (_what, exit) => {
    const { rec, notes, core } = setup();
    const t = taskIn('TMGR_STAGING_OUTPUT_PENDING', { pilot: 'p1', ...exit });
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT, t1 FAILED']);
    expect(facts(notes.at(-1))).toEqual({
      exitCode: null,
      signal: null,
      stdout: '',
      stderr: '',
      pilot: 'p1',
      reason: {
        code: 'E_NO_EXIT_CODE',
        message: 'task ended without an exit code',
        component: 'ManagerOutputStager',
      },
    });
    rec.expectNoMore();
  });

  it('ends a task CANCELED on receipt when its cancel came first, whatever its exit', () => {
    const { rec, notes, core } = setup();
    core.onCancel(['ok', 'bad']);
    rec.expectNoMore();
    const ok = back('ok');
    core.onTasks([ok, back('bad', { exitCode: 1 }), back('other')]);
    expect(rec.take()).toEqual([
      'notify ok CANCELED, bad CANCELED, other TMGR_STAGING_OUTPUT, other DONE',
    ]);
    expect(ok.state).toBe('CANCELED');
    expect(facts(notes[0])).toEqual({ reason: canceledByUser('ManagerOutputStager') });
    rec.expectNoMore();
  });

  describe('retries', () => {
    const flaky = (uid: string, retried: number, overrides: TaskOverrides = {}): TaskRecord =>
      back(uid, {
        exitCode: 3,
        stderr: 'boom\n',
        seq: 4,
        retried,
        ...overrides,
        description: { executable: '/bin/false', retries: 2 },
      });

    it('starts the next attempt of a failed task with retries left, with why and what it printed', () => {
      const { rec, notes, core } = setup();
      core.onTasks([flaky('t1', 0)]);
      expect(rec.take()).toEqual([
        'notify t1 TMGR_STAGING_OUTPUT, t1 TMGR_SCHEDULING_PENDING',
        'retry t1#2/1',
      ]);
      expect(notes[1]).toMatchObject({
        attempt: 2,
        component: 'ManagerOutputStager',
        detail: { exitCode: 3, stderr: 'boom\n', retried: 1, reason: { code: 'E_EXIT_CODE' } },
      });
      rec.expectNoMore();
    });

    it('retries timeouts and signals too, and fails once the retries are used', () => {
      const { rec, core } = setup();
      const timeout: Reason = {
        code: 'E_TASK_TIMEOUT',
        message: 'too long',
        component: 'Executor',
      };
      core.onTasks([
        flaky('a', 1, { exitCode: null, signal: 'SIGTERM', reason: timeout }),
        flaky('b', 1, { exitCode: null, signal: 'SIGKILL' }),
        flaky('c', 2),
      ]);
      expect(rec.take()).toEqual([
        'notify a TMGR_STAGING_OUTPUT, a TMGR_SCHEDULING_PENDING, b TMGR_STAGING_OUTPUT, b TMGR_SCHEDULING_PENDING, c TMGR_STAGING_OUTPUT, c FAILED',
        'retry a#2/2, b#2/2',
      ]);
      rec.expectNoMore();
    });

    it('never retries what would fail the same way (a missing executable)', () => {
      const { rec, core } = setup();
      const missing: Reason = { code: 'E_EXEC_NOT_FOUND', message: 'no x', component: 'Executor' };
      core.onTasks([flaky('t1', 0, { exitCode: null, reason: missing })]);
      expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT, t1 FAILED']);
      rec.expectNoMore();
    });

    it('never retries a canceled task', () => {
      const { rec, core } = setup();
      core.onCancel(['t1']);
      core.onTasks([flaky('t1', 0)]);
      expect(rec.take()).toEqual(['notify t1 CANCELED']);
      rec.expectNoMore();
    });
  });

  it('makes one notify call for a bulk', () => {
    const { rec, notes, core } = setup();
    const tasks = Array.from({ length: 100 }, (_, i) => back(`t${i}`, { exitCode: i % 3 }));
    core.onTasks(tasks);
    expect(rec.take().map((c) => c.split(' ')[0])).toEqual(['notify']);
    expect(notes).toHaveLength(200);
    expect(tasks.filter((t) => t.state === 'DONE')).toHaveLength(34);
    rec.expectNoMore();
  });

  it('drops a second copy of a task it ended (a resumed client may get it from the store and from its agent) until it hears the final', () => {
    const { rec, core } = setup();
    core.onCancel(['t2']);
    core.onTasks([back('t1'), back('t2')]);
    expect(rec.take()).toEqual(['notify t1 TMGR_STAGING_OUTPUT, t1 DONE, t2 CANCELED']);
    // the copies, even one with another exit, and one canceled meanwhile: no second word
    core.onCancel(['t1']);
    core.onTasks([back('t1', { exitCode: 1 }), back('t2'), back('t1')]);
    rec.expectNoMore();
    // a newer attempt is another task
    core.onTasks([back('t1', { attempt: 2 })]);
    expect(rec.take()).toEqual(['notify t1 CANCELED']);
    // once its final is heard it is forgotten: the store keeps one notification per state
    core.onTasksFinal([{ uid: 't2', attempt: 1, state: 'CANCELED' }]);
    core.onTasks([back('t2')]);
    expect(rec.take()).toEqual(['notify t2 TMGR_STAGING_OUTPUT, t2 DONE']);
    rec.expectNoMore();
  });

  describe('hand-over', () => {
    handOverTests({
      from: 'TMGR_STAGING_OUTPUT_PENDING',
      setup,
      pending: back,
      walk: ['TMGR_STAGING_OUTPUT', 'DONE'],
      others: { exitCode: 0, signal: null },
      bulk: { wrong: 'AGENT_STAGING_OUTPUT' },
    });
  });
});
