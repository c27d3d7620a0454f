import { describe, expect, it } from '@jest/globals';
import { published } from '../../../../src/components/shared/transition';
import { facts } from '../../../support/facts';
import {
  AgentInputStagerCore,
  needsOwnSandbox,
  outputOf,
  type OutputMode,
} from '../../../../src/components/agent-input-stager/core';
import type { StagingStep } from '../../../../src/components/shared/staging-paths';
import type { TaskRecord } from '../../../../src/generated';
import {
  AGENT_SHUTDOWN,
  canceledByUser,
  CoreHarness,
  handOverTests,
  taskRecord,
  uidsLine,
} from '../../../support/core-harness';

const PILOT_SANDBOX = '/scratch/pilot.1';
const CANCELED = canceledByUser('AgentInputStager');

/** `output`: the pilot's agent.output (left out: the core's own default). */
function setup(output?: OutputMode) {
  const h = new CoreHarness();
  const steps: { uid: string; steps: StagingStep[] }[] = [];
  const effects = h.effects({
    stage: h.uids('stage'),
    stageInput: (work: { uid: string; steps: StagingStep[] }[]) => {
      steps.push(...work);
      h.rec.record(uidsLine('stageInput', work));
    },
  });
  return Object.assign(h, {
    steps,
    core:
      output === undefined
        ? new AgentInputStagerCore(effects, h.clock, PILOT_SANDBOX)
        : new AgentInputStagerCore(effects, h.clock, PILOT_SANDBOX, output),
  });
}

function pending(uid: string): TaskRecord {
  return taskRecord(uid, 'AGENT_STAGING_INPUT_PENDING', { pilot: 'pilot.1' });
}

describe('AgentInputStagerCore', () => {
  it("sets an output 'files' task's sandbox inside the pilot sandbox and asks for it to be staged", () => {
    const { rec, noteBase, notes, core } = setup('files');
    const t = pending('t1');
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t1 AGENT_STAGING_INPUT', 'stage t1']);
    expect(t.state).toBe('AGENT_STAGING_INPUT');
    expect(t.sandbox).toBe('/scratch/pilot.1/t1');
    expect(t.output).toBe('files');
    expect(notes).toEqual([{ ...noteBase('AgentInputStager'), state: 'AGENT_STAGING_INPUT' }]);
    rec.expectNoMore();
  });

  it("streams an executable's output by default, in a directory of its own; 'pilot' shares the pilot's", () => {
    const { rec, notes, core } = setup();
    const t = pending('t1');
    const shared = pending('t2');
    shared.description.workdir = 'pilot';
    core.onTasks([t, shared]);
    expect(rec.take()).toEqual([
      'notify t1 AGENT_STAGING_INPUT, t2 AGENT_STAGING_INPUT',
      'stage t1, t2',
    ]);
    expect([t.output, t.sandbox]).toEqual(['stream', `${PILOT_SANDBOX}/t1`]);
    expect([shared.output, shared.sandbox]).toEqual(['stream', PILOT_SANDBOX]);
    core.onStaged([{ uid: 't1' }, { uid: 't2' }]);
    expect(rec.take()).toEqual([
      'notify t1 AGENT_SCHEDULING_PENDING, t2 AGENT_SCHEDULING_PENDING',
      'forward t1, t2',
    ]);
    // where its files are and where its output goes; no directory of its own to name for t2
    expect(notes.slice(-2).map(facts)).toEqual([
      { sandbox: `${PILOT_SANDBOX}/t1`, output: 'stream' },
      { output: 'stream' },
    ]);
    expect(published(notes.slice(-2))).toEqual([]); // carried by their next published one
    rec.expectNoMore();
  });

  it("says where the output goes for both modes, a task's own `output` over the pilot's", () => {
    for (const pilot of ['files', 'stream'] as const) {
      const { notes, core } = setup(pilot);
      const other = pilot === 'files' ? 'stream' : 'files';
      const own = pending('own');
      own.description.output = other;
      core.onTasks([pending('dflt'), own]);
      core.onStaged([{ uid: 'dflt' }, { uid: 'own' }]);
      const said = notes.slice(-2).map((n) => [n.uid, facts(n)?.output]);
      expect(said).toEqual([
        ['dflt', pilot],
        ['own', other],
      ]);
    }
  });

  it('gives a function task a directory of its own, the pilot sandbox when it asks (sandbox: false) and stages nothing', () => {
    const { rec, notes, core } = setup();
    const fn = { mode: 'function' as const, function: { module: '/m.js' } };
    const shared = taskRecord('t1', 'AGENT_STAGING_INPUT_PENDING', {
      description: { ...fn, sandbox: false },
    });
    const own = taskRecord('t2', 'AGENT_STAGING_INPUT_PENDING', {
      description: {
        ...fn,
        sandbox: false,
        outputStaging: [{ source: 'task:///o', target: '/tmp/o' }],
      },
    });
    const dflt = taskRecord('t3', 'AGENT_STAGING_INPUT_PENDING', { description: fn });
    core.onTasks([shared, own, dflt]);
    expect(rec.take()).toEqual([
      'notify t1 AGENT_STAGING_INPUT, t2 AGENT_STAGING_INPUT, t3 AGENT_STAGING_INPUT',
      'stage t1, t2, t3',
    ]);
    expect([shared.sandbox, own.sandbox, dflt.sandbox]).toEqual([
      PILOT_SANDBOX,
      `${PILOT_SANDBOX}/t2`,
      `${PILOT_SANDBOX}/t3`,
    ]);
    core.onStaged([{ uid: 't1' }, { uid: 't2' }, { uid: 't3' }]);
    expect(rec.take()).toEqual([
      'notify t1 AGENT_SCHEDULING_PENDING, t2 AGENT_SCHEDULING_PENDING, t3 AGENT_SCHEDULING_PENDING',
      'forward t1, t2, t3',
    ]);
    // a sandbox of its own is named: quiet too, its next published notification carries where
    // the sandbox is (see onlyWhere in quiet-states.ts)
    expect(notes.slice(-3).map((n) => n.detail)).toEqual([
      undefined,
      { sandbox: `${PILOT_SANDBOX}/t2` },
      { sandbox: `${PILOT_SANDBOX}/t3` },
    ]);
    expect(published(notes.slice(-3))).toEqual([]);
    rec.expectNoMore();
  });

  it('hands a staged task to the scheduler with its sandbox and output in the notification', () => {
    const { rec, notes, core } = setup('files');
    const t = pending('t1');
    core.onTasks([t]);
    rec.take();
    core.onStaged([{ uid: 't1' }]);
    expect(rec.take()).toEqual(['notify t1 AGENT_SCHEDULING_PENDING', 'forward t1']);
    expect(t.state).toBe('AGENT_SCHEDULING_PENDING');
    expect(facts(notes.at(-1))).toEqual({ sandbox: '/scratch/pilot.1/t1', output: 'files' });
    core.onStaged([{ uid: 't1' }]); // a repeat: already handed on
    rec.expectNoMore();
  });

  it('fails a task whose sandbox cannot be created with E_STAGING naming the path and errno', () => {
    const { rec, notes, core } = setup('files');
    const t = pending('t1');
    core.onTasks([t]);
    rec.take();
    core.onStaged([{ uid: 't1', error: { code: 'EACCES', message: 'permission denied' } }]);
    expect(rec.take()).toEqual(['notify t1 FAILED']);
    const why = {
      code: 'E_STAGING',
      message: 'cannot create the task sandbox /scratch/pilot.1/t1: permission denied',
      component: 'AgentInputStager',
      detail: { errno: 'EACCES' },
    };
    expect(t.state).toBe('FAILED');
    expect(t.reason).toEqual(why);
    expect(facts(notes.at(-1))).toEqual({ reason: why });
    rec.expectNoMore();
  });

  it('stages a bulk in one call and reports its results in one notify and one forward', () => {
    const { rec, core } = setup();
    core.onTasks([pending('a'), pending('b'), pending('c')]);
    expect(rec.take()).toEqual([
      'notify a AGENT_STAGING_INPUT, b AGENT_STAGING_INPUT, c AGENT_STAGING_INPUT',
      'stage a, b, c',
    ]);
    core.onStaged([
      { uid: 'a' },
      { uid: 'b', error: { code: 'ENOSPC', message: 'no space left' } },
      { uid: 'c' },
    ]);
    expect(rec.take()).toEqual([
      'notify a AGENT_SCHEDULING_PENDING, b FAILED, c AGENT_SCHEDULING_PENDING',
      'forward a, c',
    ]);
    rec.expectNoMore();
  });

  it('ignores results for tasks it is not staging', () => {
    const { rec, core } = setup();
    core.onStaged([{ uid: 'nobody' }, { uid: 'ghost', error: { code: 'EIO', message: 'x' } }]);
    rec.expectNoMore();
  });

  it('cancels a task on receipt when its cancel came first, without staging it', () => {
    const { rec, notes, core } = setup();
    core.onCancel(['t1']);
    rec.expectNoMore();
    const t = pending('t1');
    core.onTasks([t, pending('t2')]);
    expect(rec.take()).toEqual(['notify t1 CANCELED, t2 AGENT_STAGING_INPUT', 'stage t2']);
    expect(t.state).toBe('CANCELED');
    expect(t.sandbox).toBeUndefined();
    expect(facts(notes[0])).toEqual({ reason: CANCELED });
    rec.expectNoMore();
  });

  it.each([
    ['succeeds', undefined],
    ['fails', { code: 'EACCES', message: 'permission denied' }],
  ])(
    'cancels a task during staging once its staging %s, and does not hand it on',
    (_how, error) => {
      const { rec, notes, core } = setup();
      const t = pending('t1');
      core.onTasks([t]);
      rec.take();
      core.onCancel(['t1']);
      rec.expectNoMore(); // the staging in flight is let finish
      core.onStaged([error === undefined ? { uid: 't1' } : { uid: 't1', error }]);
      expect(rec.take()).toEqual(['notify t1 CANCELED']);
      expect(t.state).toBe('CANCELED');
      expect(facts(notes.at(-1))).toEqual({ reason: CANCELED });
      rec.expectNoMore();
    },
  );

  it('does nothing on a cancel for a task it has already handed on', () => {
    const { rec, core } = setup();
    const t = pending('t1');
    core.onTasks([t]);
    core.onStaged([{ uid: 't1' }]);
    rec.take();
    core.onCancel(['t1']);
    expect(t.state).toBe('AGENT_SCHEDULING_PENDING');
    rec.expectNoMore();
  });

  it.each(['FAILED', 'CANCELED'] as const)(
    'ends every task being staged %s on shutdown and ignores late results',
    (final) => {
      const { rec, notes, core } = setup();
      const a = pending('a');
      const b = pending('b');
      const done = pending('done');
      core.onTasks([done, a, b]);
      core.onStaged([{ uid: 'done' }]);
      rec.take();
      core.onShutdown(final, AGENT_SHUTDOWN);
      expect(rec.take()).toEqual([`notify a ${final}, b ${final}`]);
      expect(a.state).toBe(final);
      expect(facts(notes.at(-1))).toEqual({ reason: AGENT_SHUTDOWN });
      expect(done.state).toBe('AGENT_SCHEDULING_PENDING');
      core.onStaged([{ uid: 'a' }, { uid: 'b' }]);
      core.onShutdown(final, AGENT_SHUTDOWN);
      rec.expectNoMore();
    },
  );

  describe('order', () => {
    it('hands staged tasks on in arrival order, across bulks, whatever order they are staged in', () => {
      const { rec, core } = setup();
      core.onTasks([pending('a1'), pending('a2'), pending('a3')]);
      core.onTasks([pending('b1')]);
      rec.take();
      // the later bulk is staged first (a bulk is staged in chunks): it waits for the earlier
      core.onStaged([{ uid: 'b1' }]);
      core.onStaged([{ uid: 'a1' }]);
      expect(rec.take()).toEqual(['notify a1 AGENT_SCHEDULING_PENDING', 'forward a1']);
      core.onStaged([{ uid: 'a3' }]);
      rec.expectNoMore();
      core.onStaged([{ uid: 'a2' }]);
      expect(rec.take()).toEqual([
        'notify a2 AGENT_SCHEDULING_PENDING, a3 AGENT_SCHEDULING_PENDING, b1 AGENT_SCHEDULING_PENDING',
        'forward a2, a3, b1',
      ]);
      rec.expectNoMore();
    });

    it('reports a failure or a cancel in its turn, and lets the tasks behind it go on', () => {
      const { rec, core } = setup();
      core.onTasks([pending('a'), pending('b'), pending('c')]);
      core.onCancel(['b']);
      rec.take();
      core.onStaged([{ uid: 'c' }, { uid: 'b' }]);
      rec.expectNoMore();
      core.onStaged([{ uid: 'a', error: { code: 'EACCES', message: 'permission denied' } }]);
      expect(rec.take()).toEqual([
        'notify a FAILED, b CANCELED, c AGENT_SCHEDULING_PENDING',
        'forward c',
      ]);
      rec.expectNoMore();
    });

    it('does not hold later tasks behind a task with input staging directives, nor it behind them', () => {
      const { rec, core } = setup();
      const slow = pending('slow');
      slow.description.inputStaging = [{ source: 'pilot://big.dat', target: 'task://big.dat' }];
      core.onTasks([pending('a'), slow, pending('b')]);
      rec.take();
      core.onStaged([{ uid: 'a' }, { uid: 'b' }]);
      expect(rec.take()).toEqual([
        'notify a AGENT_SCHEDULING_PENDING, b AGENT_SCHEDULING_PENDING',
        'forward a, b',
      ]);
      core.onTasks([pending('c')]);
      rec.take();
      core.onStaged([{ uid: 'slow' }]); // c is still being staged
      expect(rec.take()).toEqual(['notify slow AGENT_SCHEDULING_PENDING', 'forward slow']);
      rec.expectNoMore();
    });

    it('releases nothing held once shut down, and takes new tasks in a fresh line', () => {
      const { rec, core } = setup();
      core.onTasks([pending('a'), pending('b')]);
      core.onStaged([{ uid: 'b' }]);
      core.onShutdown('FAILED', AGENT_SHUTDOWN);
      expect(rec.take()).toEqual([
        'notify a AGENT_STAGING_INPUT, b AGENT_STAGING_INPUT',
        'stage a, b',
        'notify a FAILED, b FAILED',
      ]);
      core.onStaged([{ uid: 'a' }]);
      rec.expectNoMore();
    });
  });

  describe('input directives', () => {
    const STAGING = {
      input: [
        { source: '/home/u/in.txt', target: 'task://', action: 'copy' as const, optional: false },
        { source: 'pilot://db', target: 'task://db', action: 'link' as const, optional: true },
      ],
      output: [],
    };
    function staged(uid: string): TaskRecord {
      return taskRecord(uid, 'AGENT_STAGING_INPUT_PENDING', {
        pilot: 'pilot.1',
        staging: STAGING,
        description: { inputStaging: [{ source: 'client://in.txt', target: 'task://' }] },
      });
    }
    const stepsOf = (uid: string) => [
      {
        index: 0,
        action: 'copy',
        source: '/home/u/in.txt',
        target: `/scratch/pilot.1/${uid}`,
        optional: false,
      },
      {
        index: 1,
        action: 'link',
        source: '/scratch/pilot.1/db',
        target: `/scratch/pilot.1/${uid}/db`,
        optional: true,
      },
    ];

    it('performs them once the sandbox is made, then hands the task on', () => {
      const { rec, notes, steps, core } = setup();
      const t = staged('t1');
      core.onTasks([t, pending('plain')]);
      core.onStaged([{ uid: 't1' }, { uid: 'plain' }]);
      expect(rec.take()).toEqual([
        'notify t1 AGENT_STAGING_INPUT, plain AGENT_STAGING_INPUT',
        'stage t1, plain',
        'notify plain AGENT_SCHEDULING_PENDING',
        'forward plain',
        'stageInput t1',
      ]);
      expect(steps).toEqual([{ uid: 't1', steps: stepsOf('t1') }]);
      expect(t.state).toBe('AGENT_STAGING_INPUT');
      core.onStaged([{ uid: 't1' }]); // a repeat of the sandbox result: already past it
      rec.expectNoMore();
      core.onInputStaged([{ uid: 't1', failures: [] }]);
      expect(rec.take()).toEqual(['notify t1 AGENT_SCHEDULING_PENDING', 'forward t1']);
      // a task with directives has a sandbox of its own, whatever its output
      expect(facts(notes.at(-1))).toEqual({ sandbox: '/scratch/pilot.1/t1', output: 'stream' });
      core.onInputStaged([{ uid: 't1', failures: [] }]);
      rec.expectNoMore();
    });

    it('fails the task in AGENT_STAGING_INPUT with E_STAGING naming directive, file and errno', () => {
      const { rec, notes, core } = setup();
      const t = staged('t1');
      core.onTasks([t]);
      core.onStaged([{ uid: 't1' }]);
      rec.take();
      const failure = {
        index: 0,
        path: '/home/u/in.txt',
        errno: 'ENOENT',
        text: 'no such file or directory',
      };
      core.onInputStaged([{ uid: 't1', failures: [failure] }]);
      expect(rec.take()).toEqual(['notify t1 FAILED']);
      const why = {
        code: 'E_STAGING',
        message:
          'inputStaging[0] (copy client://in.txt -> task://): /home/u/in.txt: no such file or directory (ENOENT)',
        component: 'AgentInputStager',
        detail: { directive: 0, path: '/home/u/in.txt', errno: 'ENOENT' },
      };
      expect(t.reason).toEqual(why);
      expect(notes.at(-1)).toMatchObject({
        state: 'FAILED',
        detail: { sandbox: '/scratch/pilot.1/t1', reason: why },
      });
      rec.expectNoMore();
    });

    it('fails a task whose record holds a directive it cannot place, without staging it', () => {
      const { rec, core } = setup();
      const t = taskRecord('t1', 'AGENT_STAGING_INPUT_PENDING', {
        staging: { input: [{ source: 'client://x', target: 'task://' }], output: [] },
      });
      core.onTasks([t]);
      core.onStaged([{ uid: 't1' }]);
      expect(rec.take()).toEqual(['notify t1 AGENT_STAGING_INPUT', 'stage t1', 'notify t1 FAILED']);
      expect(t.reason).toMatchObject({
        code: 'E_STAGING',
        message: "inputStaging[0]: 'client://x' was not resolved by the client",
      });
      rec.expectNoMore();
    });

    it('cancels a task whose cancel came while its directives ran', () => {
      const { rec, notes, core } = setup();
      const t = staged('t1');
      core.onTasks([t]);
      core.onStaged([{ uid: 't1' }]);
      rec.take();
      core.onCancel(['t1']);
      rec.expectNoMore();
      core.onInputStaged([{ uid: 't1', failures: [] }]);
      expect(rec.take()).toEqual(['notify t1 CANCELED']);
      expect(facts(notes.at(-1))).toEqual({ reason: CANCELED });
      rec.expectNoMore();
    });

    it('ends a task whose directives are running on shutdown, and ignores their late result', () => {
      const { rec, core } = setup();
      const t = staged('t1');
      core.onTasks([t]);
      core.onStaged([{ uid: 't1' }]);
      rec.take();
      core.onShutdown('FAILED', AGENT_SHUTDOWN);
      expect(rec.take()).toEqual(['notify t1 FAILED']);
      core.onInputStaged([{ uid: 't1', failures: [] }]);
      rec.expectNoMore();
    });
  });

  describe('which tasks get a sandbox of their own (needsOwnSandbox) and where output goes (outputOf)', () => {
    type D = TaskRecord['description'];
    const exe: D = { mode: 'executable', executable: '/bin/true' };
    const fn: D = { mode: 'function', function: { module: '/m.js' } };
    const svc: D = { mode: 'service', executable: '/bin/srv', service: {} };
    const staged = [{ source: 'pilot://a', target: 'task://a' }];

    it.each<[string, D, OutputMode, OutputMode | undefined]>([
      ['an executable, pilot default stream', exe, 'stream', 'stream'],
      ['an executable, pilot default files', exe, 'files', 'files'],
      [
        "an executable's own output over the pilot's",
        { ...exe, output: 'files' },
        'stream',
        'files',
      ],
      ['a service: always files', { ...svc, output: 'stream' }, 'stream', 'files'],
      ['a function call: none', fn, 'stream', undefined],
    ])('outputOf: %s', (_what, d, pilotDefault, want) => {
      expect(outputOf(d, pilotDefault)).toBe(want);
    });

    const pilotWd: D = { ...exe, workdir: 'pilot' };
    it.each<[string, D, OutputMode | undefined, boolean]>([
      ['a streaming executable (by default)', exe, 'stream', true],
      ['a function call (by default)', fn, undefined, true],
      ["a streaming executable in workdir 'pilot'", pilotWd, 'stream', false],
      ['a streaming executable in an absolute workdir', { ...exe, workdir: '/w' }, 'stream', false],
      ['a streaming executable of sandbox: false', { ...exe, sandbox: false }, 'stream', false],
      ["an output 'files' executable in workdir 'pilot'", pilotWd, 'files', true],
      ["a service in workdir 'pilot'", { ...svc, workdir: 'pilot' }, 'files', true],
      [
        "a streaming executable in workdir 'pilot' that asks (sandbox: true)",
        { ...pilotWd, sandbox: true },
        'stream',
        true,
      ],
      [
        "a streaming executable in workdir 'pilot' with input staging",
        { ...pilotWd, inputStaging: staged },
        'stream',
        true,
      ],
      [
        "a streaming executable in workdir 'pilot' with output staging",
        { ...pilotWd, outputStaging: staged },
        'stream',
        true,
      ],
      ["one in workdir 'pilot' with preExec", { ...pilotWd, preExec: ['true'] }, 'stream', true],
      ["one in workdir 'pilot' with postExec", { ...pilotWd, postExec: ['true'] }, 'stream', true],
      ["one in workdir 'pilot' of 2 ranks", { ...pilotWd, ranks: 2 }, 'stream', true],
      ["one in workdir 'pilot' by mpirun", { ...pilotWd, launch: 'mpirun' }, 'stream', true],
      ['a function call of sandbox: false', { ...fn, sandbox: false }, undefined, false],
      [
        'a function call of sandbox: false with staging',
        { ...fn, sandbox: false, inputStaging: staged },
        undefined,
        true,
      ],
    ])('needsOwnSandbox: %s -> %s', (_what, d, output, want) => {
      const t = taskRecord('t1', 'AGENT_STAGING_INPUT', { description: d });
      if (output !== undefined) t.output = output;
      expect(needsOwnSandbox(t)).toBe(want);
    });
  });

  describe('hand-over', () => {
    handOverTests({
      from: 'AGENT_STAGING_INPUT_PENDING',
      setup,
      pending,
      finish: (s) => s.core.onStaged([{ uid: 't1' }]),
      walk: ['AGENT_STAGING_INPUT', 'AGENT_SCHEDULING_PENDING'],
      bulk: {
        wrong: 'AGENT_STAGING_INPUT',
        after: (s, ok) => {
          expect(ok.sandbox).toBeUndefined();
          s.core.onStaged([{ uid: 'ok' }]); // it was never taken in
          s.core.onShutdown('FAILED', AGENT_SHUTDOWN);
        },
      },
    });
  });
});
