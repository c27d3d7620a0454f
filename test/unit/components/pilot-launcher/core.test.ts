import { describe, expect, it } from '@jest/globals';
import { PilotLauncherCore } from '../../../../src/components/pilot-launcher/core';
import type { PilotLauncherEffects } from '../../../../src/components/pilot-launcher/effects';
import type { PilotRecord } from '../../../../src/components/pilot-launcher/pilot-record';
import { IllegalTransitionError } from '../../../../src/errors';
import type { PilotLiveness, Reason } from '../../../../src/generated';
import { PILOT_STATES } from '../../../../src/states/pilot-model';
import { CoreHarness, pilotIn } from '../../../support/core-harness';

/** A silence limit longer than any test here: for agents that stay heard throughout. */
const HEARD = 86_400;

const GRACE = 5_000;
const BY_USER = 'pilot canceled by the user';
const EXIT_0 = { exitCode: 0, signal: null, stderr: '' };

function setup() {
  const h = new CoreHarness();
  const ended: { uid: string; state: string; reason: Reason | undefined }[] = [];
  /** The liveness effects, apart from `rec`: they come with any silence of 3 s. */
  const lives: ({ uid: string } & PilotLiveness)[] = [];
  const effects: PilotLauncherEffects = {
    launch: (p) => h.rec.record(`launch ${p.uid}`),
    shutdownAgent: (uid, final, message) =>
      h.rec.record(`shutdownAgent ${uid} ${final} ${message}`),
    kill: (uid) => h.rec.record(`kill ${uid}`),
    notify: h.notify,
    ended: (uid, state, reason) => {
      ended.push({ uid, state, reason });
      h.rec.record(`ended ${uid} ${state}`);
    },
    liveness: (uid, l) => lives.push({ uid, ...l }),
  };
  const core = new PilotLauncherCore(effects, h.clock, { shutdownGraceMs: GRACE });
  return Object.assign(h, { ended, lives, core });
}

function pending(uid = 'p1'): PilotRecord {
  return pilotIn('PMGR_LAUNCHING_PENDING', { uid, sandbox: `/sandbox/${uid}` });
}

/** Drives a pilot to PMGR_ACTIVE and drops the effects of getting there. */
function activate(s: ReturnType<typeof setup>, uid = 'p1'): PilotRecord {
  const p = pending(uid);
  s.core.onSubmit([p]);
  s.core.onLaunched(uid);
  s.core.onAgentReady(uid);
  expect(s.rec.take()).toEqual([
    `notify ${uid} PMGR_LAUNCHING`,
    `launch ${uid}`,
    `notify ${uid} PMGR_ACTIVE_PENDING`,
    `notify ${uid} PMGR_ACTIVE`,
  ]);
  return p;
}

describe('PilotLauncherCore', () => {
  it('takes a pilot through PMGR_LAUNCHING, PMGR_ACTIVE_PENDING and PMGR_ACTIVE', () => {
    const { rec, clock, notes, core } = setup();
    const p = pending();
    core.onSubmit([p]);
    expect(rec.take()).toEqual(['notify p1 PMGR_LAUNCHING', 'launch p1']);
    expect(p.state).toBe('PMGR_LAUNCHING');
    expect(core.active).toEqual(['p1']);
    core.onLaunched('p1');
    expect(rec.take()).toEqual(['notify p1 PMGR_ACTIVE_PENDING']);
    clock.advance(1_234);
    core.onAgentReady('p1');
    expect(rec.take()).toEqual(['notify p1 PMGR_ACTIVE']);
    expect(p.state).toBe('PMGR_ACTIVE');
    const base = { kind: 'pilot', uid: 'p1', attempt: 1, component: 'PilotLauncher' };
    expect(notes).toEqual([
      { ...base, state: 'PMGR_LAUNCHING', ts: clock.now() - 1_234 },
      { ...base, state: 'PMGR_ACTIVE_PENDING', ts: clock.now() - 1_234 },
      {
        ...base,
        state: 'PMGR_ACTIVE',
        ts: clock.now(),
        detail: { jobStarted: clock.now() - 1_234 },
      },
    ]);
    rec.expectNoMore();
  });

  it('kills an agent that outlives its runtime limit by the grace period, not before', () => {
    const s = setup();
    const p = pilotIn('PMGR_LAUNCHING_PENDING', { uid: 'p1', sandbox: '/sandbox/p1' });
    p.description.runtimeMin = 2;
    p.description.agent = { clientTimeoutS: HEARD }; // heard throughout: the runtime limit acts
    s.core.onSubmit([p]);
    s.core.onLaunched('p1');
    s.core.onAgentReady('p1');
    s.rec.take();
    s.clock.advance(2 * 60_000 + GRACE - 1);
    s.rec.expectNoMore();
    s.clock.advance(1);
    expect(s.rec.take()).toEqual(['kill p1']);
    s.core.onAgentExited('p1', { exitCode: null, signal: 'SIGKILL', stderr: '' });
    expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
    expect(s.clock.pending()).toBe(0);
    s.rec.expectNoMore();
  });

  it('notifies a submitted bulk in one call, then launches each pilot', () => {
    const { rec, core } = setup();
    core.onSubmit([pending('p1'), pending('p2')]);
    expect(rec.take()).toEqual([
      'notify p1 PMGR_LAUNCHING, p2 PMGR_LAUNCHING',
      'launch p1',
      'launch p2',
    ]);
    expect(core.active).toEqual(['p1', 'p2']);
    rec.expectNoMore();
  });

  it('ignores repeated or early life events', () => {
    const { rec, core } = setup();
    core.onSubmit([pending()]);
    rec.take();
    core.onAgentReady('p1'); // not launched yet
    core.onLaunched('p1');
    expect(rec.take()).toEqual(['notify p1 PMGR_ACTIVE_PENDING']);
    core.onLaunched('p1');
    core.onAgentReady('p1');
    expect(rec.take()).toEqual(['notify p1 PMGR_ACTIVE']);
    core.onAgentReady('p1');
    core.onLaunched('p1');
    core.onLaunched('nobody');
    core.onAgentReady('nobody');
    core.onAgentFinal('nobody', 'DONE', 'x');
    core.onAgentExited('nobody', EXIT_0);
    core.onLaunchFailed('nobody', { message: 'x' });
    core.onCancel(['nobody']);
    rec.expectNoMore();
  });

  it('ends a pilot DONE with the agent’s message when the agent said DONE and exited 0', () => {
    const s = setup();
    const p = activate(s);
    s.core.onAgentFinal('p1', 'DONE', 'runtime limit reached');
    s.rec.expectNoMore();
    s.core.onAgentExited('p1', EXIT_0);
    expect(s.rec.take()).toEqual(['notify p1 DONE', 'ended p1 DONE']);
    const why = {
      code: 'I_PILOT_DONE',
      message: 'runtime limit reached',
      component: 'PilotLauncher',
    };
    expect(p.state).toBe('DONE');
    expect(p.reason).toEqual(why);
    expect(s.notes.at(-1)?.detail).toEqual({
      reason: why,
      jobStarted: expect.any(Number),
      drainStarted: expect.any(Number),
    });
    expect(s.ended).toEqual([{ uid: 'p1', state: 'DONE', reason: why }]);
    expect(s.core.active).toEqual([]);
    s.rec.expectNoMore();
  });

  it.each(['FAILED', 'CANCELED'] as const)(
    'ends a pilot %s with E_PILOT_ENDED when the agent said so and exited 0',
    (final) => {
      const s = setup();
      const p = activate(s);
      s.core.onAgentFinal('p1', final, 'the client went away');
      s.core.onAgentExited('p1', EXIT_0);
      expect(s.rec.take()).toEqual([`notify p1 ${final}`, `ended p1 ${final}`]);
      expect(p.reason).toEqual({
        code: 'E_PILOT_ENDED',
        message: 'the client went away',
        component: 'PilotLauncher',
      });
      s.rec.expectNoMore();
    },
  );

  it.each<[string, { exitCode: number | null; signal: string | null }, string]>([
    [
      'a non-zero exit',
      { exitCode: 3, signal: null },
      'agent exited with code 3: line 3 | line 4 | fatal: no config',
    ],
    [
      'a signal',
      { exitCode: null, signal: 'SIGSEGV' },
      'agent was killed by SIGSEGV: line 3 | line 4 | fatal: no config',
    ],
    [
      'exit 0 without agent_final',
      { exitCode: 0, signal: null },
      'agent exited with code 0: line 3 | line 4 | fatal: no config',
    ],
  ])(
    'fails a pilot whose agent died (%s) naming how and the stderr tail',
    (_what, exit, message) => {
      const s = setup();
      const p = activate(s);
      s.core.onAgentExited('p1', {
        ...exit,
        stderr: 'line 1\nline 2\nline 3\nline 4\nfatal: no config\n',
      });
      expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
      expect(p.reason).toEqual({
        code: 'E_AGENT_DIED',
        message,
        component: 'PilotLauncher',
        detail: exit,
      });
      s.rec.expectNoMore();
    },
  );

  it('fails a pilot whose agent said DONE but exited non-zero, and leaves out an empty stderr', () => {
    const s = setup();
    const p = activate(s);
    s.core.onAgentFinal('p1', 'DONE', 'all done');
    s.core.onAgentExited('p1', { exitCode: 1, signal: null, stderr: '  \n' });
    expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
    expect(p.reason?.code).toBe('E_AGENT_DIED');
    expect(p.reason?.message).toBe('agent exited with code 1');
    s.rec.expectNoMore();
  });

  it('fails a pilot whose agent exits before it ever becomes active', () => {
    const s = setup();
    const p = pending();
    s.core.onSubmit([p]);
    s.core.onLaunched('p1');
    s.rec.take();
    s.core.onAgentExited('p1', { exitCode: 2, signal: null, stderr: 'cannot connect' });
    expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
    expect(p.reason?.message).toBe('agent exited with code 2: cannot connect');
    s.rec.expectNoMore();
  });

  it.each(['PMGR_LAUNCHING', 'PMGR_ACTIVE_PENDING'] as const)(
    'fails, not DONE, a pilot whose agent reports DONE while still in %s, with a reason that says so',
    (state) => {
      const s = setup();
      const p = pending();
      s.core.onSubmit([p]);
      if (state === 'PMGR_ACTIVE_PENDING') s.core.onLaunched('p1');
      s.rec.take();
      s.core.onAgentFinal('p1', 'DONE', 'nothing to do');
      s.core.onAgentExited('p1', EXIT_0);
      expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
      expect(p.state).toBe('FAILED');
      const why = {
        code: 'E_NEVER_ACTIVE',
        message: `the agent ended before the pilot became active (in ${state}): nothing to do`,
        component: 'PilotLauncher',
        detail: { state },
      };
      expect(p.reason).toEqual(why);
      expect(s.notes.at(-1)?.detail).toMatchObject({
        reason: why,
        drainStarted: expect.any(Number),
      });
      expect(s.ended).toEqual([{ uid: 'p1', state: 'FAILED', reason: why }]);
      s.rec.expectNoMore();
    },
  );

  it('fails a pilot whose launch failed with E_LAUNCH and ignores what comes after', () => {
    const s = setup();
    const p = pending();
    s.core.onSubmit([p]);
    s.rec.take();
    s.core.onLaunchFailed('p1', { message: 'spawn /usr/bin/node ENOENT' });
    expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
    const why = {
      code: 'E_LAUNCH',
      message: 'cannot start the agent: spawn /usr/bin/node ENOENT',
      component: 'PilotLauncher',
    };
    expect(p.reason).toEqual(why);
    expect(s.notes.at(-1)?.detail).toEqual({ reason: why });
    s.core.onLaunched('p1');
    s.core.onAgentReady('p1');
    // an agent of it that reports in after all is told to stop; nothing else changes
    expect(s.rec.take()).toEqual([expect.stringMatching(/^shutdownAgent p1 FAILED/)]);
    s.core.onAgentExited('p1', EXIT_0);
    s.core.onLaunchFailed('p1', { message: 'again' });
    s.core.onCancel(['p1']);
    expect(s.core.active).toEqual([]);
    s.rec.expectNoMore();
  });

  it('asks an active agent to shut down on cancel and kills it after shutdownGraceMs if it has not exited', () => {
    const s = setup();
    const p = activate(s);
    s.core.onCancel(['p1']);
    expect(s.rec.take()).toEqual([`shutdownAgent p1 CANCELED ${BY_USER}`]);
    s.core.onCancel(['p1']); // a second cancel asks nothing more
    s.clock.advance(GRACE - 1);
    s.rec.expectNoMore();
    s.clock.advance(1);
    expect(s.rec.take()).toEqual(['kill p1']);
    s.core.onAgentExited('p1', { exitCode: null, signal: 'SIGKILL', stderr: '' });
    expect(s.rec.take()).toEqual(['notify p1 CANCELED', 'ended p1 CANCELED']);
    expect(p.reason).toEqual({ code: 'E_CANCELED', message: BY_USER, component: 'PilotLauncher' });
    s.clock.advance(10 * GRACE);
    s.rec.expectNoMore();
  });

  it('asks again on each heartbeat of a canceled agent until it says it is ending (a lost shutdown)', () => {
    const s = setup();
    activate(s);
    s.core.onCancel(['p1']);
    expect(s.rec.take()).toEqual([`shutdownAgent p1 CANCELED ${BY_USER}`]);
    s.core.onAgentHeartbeat('p1');
    expect(s.rec.take()).toEqual([`shutdownAgent p1 CANCELED ${BY_USER}`]);
    s.core.onAgentFinal('p1', 'CANCELED', 'shutting down on request');
    s.core.onAgentHeartbeat('p1');
    s.rec.expectNoMore();
    s.core.onAgentExited('p1', EXIT_0);
    expect(s.rec.take()).toEqual(['notify p1 CANCELED', 'ended p1 CANCELED']);
  });

  it("ends an active pilot DONE at its session's close, one not yet active CANCELED, each saying so", () => {
    const s = setup();
    const active = activate(s);
    const early = pending('p2');
    s.core.onSubmit([early]);
    s.core.onLaunched('p2');
    s.rec.take();
    s.core.onCancel(['p1', 'p2'], true);
    // the agent ends the tasks it holds CANCELED, and is told why
    expect(s.rec.take()).toEqual(['shutdownAgent p1 CANCELED its session closed']);
    s.core.onAgentFinal('p1', 'CANCELED', 'shutting down on request');
    s.core.onAgentExited('p1', EXIT_0);
    s.core.onAgentExited('p2', EXIT_0);
    expect(s.rec.take()).toEqual([
      'notify p1 DONE',
      'ended p1 DONE',
      'notify p2 CANCELED',
      'ended p2 CANCELED',
    ]);
    expect(active.reason).toEqual({
      code: 'I_PILOT_DONE',
      message: "ended by its session's close",
      component: 'PilotLauncher',
    });
    expect(early.reason).toEqual({
      code: 'E_CANCELED',
      message: 'its session closed before the pilot became active',
      component: 'PilotLauncher',
    });
    s.clock.advance(10 * GRACE);
    s.rec.expectNoMore();
  });

  it('does not kill an agent that exits within the grace period', () => {
    const s = setup();
    activate(s);
    s.core.onCancel(['p1']);
    expect(s.rec.take()).toEqual([`shutdownAgent p1 CANCELED ${BY_USER}`]);
    s.clock.advance(GRACE - 1);
    s.core.onAgentFinal('p1', 'CANCELED', 'shutting down on request');
    s.core.onAgentExited('p1', EXIT_0);
    expect(s.rec.take()).toEqual(['notify p1 CANCELED', 'ended p1 CANCELED']);
    expect(s.clock.pending()).toBe(0);
    s.clock.advance(1);
    s.clock.advance(10 * GRACE);
    s.rec.expectNoMore();
  });

  it('ends a canceled pilot CANCELED even when its agent had said DONE', () => {
    const s = setup();
    activate(s);
    s.core.onAgentFinal('p1', 'DONE', 'done');
    s.core.onCancel(['p1']);
    s.rec.take();
    s.core.onAgentExited('p1', EXIT_0);
    expect(s.rec.take()).toEqual(['notify p1 CANCELED', 'ended p1 CANCELED']);
    s.rec.expectNoMore();
  });

  it.each(['PMGR_LAUNCHING', 'PMGR_ACTIVE_PENDING'] as const)(
    'on cancel in %s, asks for the shutdown once the agent reports in',
    (state) => {
      const s = setup();
      const p = pending();
      s.core.onSubmit([p]);
      if (state === 'PMGR_ACTIVE_PENDING') s.core.onLaunched('p1');
      s.rec.take();
      s.core.onCancel(['p1']);
      s.rec.expectNoMore(); // the agent cannot hear it yet
      if (state === 'PMGR_LAUNCHING') {
        s.core.onLaunched('p1');
        expect(s.rec.take()).toEqual(['notify p1 PMGR_ACTIVE_PENDING']);
      }
      s.core.onAgentReady('p1');
      expect(s.rec.take()).toEqual([
        'notify p1 PMGR_ACTIVE',
        `shutdownAgent p1 CANCELED ${BY_USER}`,
      ]);
      s.core.onAgentExited('p1', EXIT_0);
      expect(s.rec.take()).toEqual(['notify p1 CANCELED', 'ended p1 CANCELED']);
      s.clock.advance(10 * GRACE);
      s.rec.expectNoMore();
    },
  );

  it('kills a canceled pilot whose agent never reports in, shutdownGraceMs after the cancel', () => {
    const s = setup();
    s.core.onSubmit([pending()]);
    s.rec.take();
    s.core.onCancel(['p1']);
    s.core.onLaunched('p1');
    expect(s.rec.take()).toEqual(['notify p1 PMGR_ACTIVE_PENDING']);
    s.clock.advance(GRACE - 1);
    s.rec.expectNoMore();
    s.clock.advance(1);
    expect(s.rec.take()).toEqual(['kill p1']);
    s.core.onAgentExited('p1', { exitCode: null, signal: 'SIGKILL', stderr: '' });
    expect(s.rec.take()).toEqual(['notify p1 CANCELED', 'ended p1 CANCELED']);
    s.rec.expectNoMore();
  });

  it('ends a pilot canceled while launching CANCELED when its agent exits before launch is reported', () => {
    const s = setup();
    s.core.onSubmit([pending()]);
    s.rec.take();
    s.core.onCancel(['p1']);
    s.core.onAgentExited('p1', { exitCode: 1, signal: null, stderr: 'x' });
    expect(s.rec.take()).toEqual(['notify p1 CANCELED', 'ended p1 CANCELED']);
    s.clock.advance(10 * GRACE);
    s.rec.expectNoMore();
  });

  it('reports ended exactly once per pilot, whatever arrives after', () => {
    const s = setup();
    activate(s, 'p1');
    activate(s, 'p2');
    s.core.onCancel(['p1', 'p2']);
    s.rec.take();
    s.core.onAgentExited('p1', EXIT_0);
    s.core.onAgentExited('p1', EXIT_0);
    s.core.onLaunchFailed('p1', { message: 'late' });
    s.clock.advance(GRACE);
    s.core.onAgentExited('p2', { exitCode: null, signal: 'SIGKILL', stderr: '' });
    s.core.onAgentExited('p2', EXIT_0);
    s.core.onCancel(['p1', 'p2']);
    s.clock.advance(GRACE);
    expect(s.rec.take()).toEqual([
      'notify p1 CANCELED',
      'ended p1 CANCELED',
      'kill p2',
      'notify p2 CANCELED',
      'ended p2 CANCELED',
    ]);
    expect(s.ended.map((e) => e.uid)).toEqual(['p1', 'p2']);
    expect(s.core.active).toEqual([]);
    s.rec.expectNoMore();
  });

  it('fails a pilot with the code its launcher gives (E_UNSUPPORTED), E_LAUNCH by default', () => {
    const s = setup();
    const p = pending();
    s.core.onSubmit([p]);
    s.rec.take();
    s.core.onLaunchFailed('p1', { code: 'E_UNSUPPORTED', message: 'no PBS launcher here' });
    expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
    expect(p.reason).toEqual({
      code: 'E_UNSUPPORTED',
      message: 'cannot start the agent: no PBS launcher here',
      component: 'PilotLauncher',
    });
    s.rec.expectNoMore();
  });

  describe('batch jobs', () => {
    const JOB_DONE = { final: 'DONE', message: 'job 7 COMPLETED', ...EXIT_0 } as const;

    /** Submits p1, whose job sbatch accepted: PMGR_ACTIVE_PENDING, queued. */
    function queued(s: ReturnType<typeof setup>, runtimeMin = 1): PilotRecord {
      const p = pilotIn('PMGR_LAUNCHING_PENDING', {
        uid: 'p1',
        description: { resource: 'slurm', nodes: 1, runtimeMin, agent: { clientTimeoutS: HEARD } },
      });
      s.core.onSubmit([p]);
      s.core.onLaunched('p1', { queued: true });
      expect(s.rec.take()).toEqual([
        'notify p1 PMGR_LAUNCHING',
        'launch p1',
        'notify p1 PMGR_ACTIVE_PENDING',
      ]);
      return p;
    }

    it('starts the runtime limit when the job starts, not while it is queued', () => {
      const s = setup();
      queued(s);
      s.clock.advance(10 * 60_000); // ten minutes in the queue: nothing to kill
      s.rec.expectNoMore();
      s.core.onJobStarted('p1');
      s.core.onJobStarted('p1'); // a second report changes nothing
      s.core.onAgentReady('p1');
      expect(s.rec.take()).toEqual(['notify p1 PMGR_ACTIVE']);
      s.clock.advance(60_000 + GRACE - 1);
      s.rec.expectNoMore();
      s.clock.advance(1);
      expect(s.rec.take()).toEqual(['kill p1']);
      s.rec.expectNoMore();
    });

    it('starts the runtime limit when the agent reports in before the poll saw the job run', () => {
      const s = setup();
      queued(s);
      s.clock.advance(5 * 60_000);
      s.core.onAgentReady('p1');
      expect(s.rec.take()).toEqual(['notify p1 PMGR_ACTIVE']);
      s.core.onJobStarted('p1'); // late poll: the timer is not started twice
      s.clock.advance(60_000 + GRACE);
      expect(s.rec.take()).toEqual(['kill p1']);
      s.rec.expectNoMore();
    });

    it('ends DONE as the agent said when the job COMPLETED', () => {
      const s = setup();
      const p = queued(s);
      s.core.onAgentReady('p1');
      s.rec.take();
      s.core.onAgentFinal('p1', 'DONE', 'runtime limit of 1 min reached');
      s.core.onJobEnded('p1', JOB_DONE);
      expect(s.rec.take()).toEqual(['notify p1 DONE', 'ended p1 DONE']);
      expect(p.reason).toEqual({
        code: 'I_PILOT_DONE',
        message: 'runtime limit of 1 min reached',
        component: 'PilotLauncher',
      });
      expect(s.clock.pending()).toBe(0);
      s.rec.expectNoMore();
    });

    it('ends CANCELED with the batch system’s words when the job was cancelled from outside', () => {
      const s = setup();
      const p = queued(s);
      s.core.onJobStarted('p1');
      s.core.onAgentReady('p1');
      s.rec.take();
      s.core.onAgentFinal('p1', 'CANCELED', 'agent received SIGTERM');
      s.core.onJobEnded('p1', {
        final: 'CANCELED',
        message: 'job 7 was cancelled (scancel)',
        exitCode: 0,
        signal: 'SIGTERM',
        stderr: '',
      });
      expect(s.rec.take()).toEqual(['notify p1 CANCELED', 'ended p1 CANCELED']);
      expect(p.reason).toEqual({
        code: 'E_JOB_CANCELED',
        message: 'job 7 was cancelled (scancel)',
        component: 'PilotLauncher',
        detail: { exitCode: 0, signal: 'SIGTERM' },
      });
      expect(s.clock.pending()).toBe(0);
      s.rec.expectNoMore();
    });

    it('ends FAILED, not CANCELED, when the job was cancelled by our own kill at the runtime limit', () => {
      const s = setup();
      const p = queued(s);
      s.core.onAgentReady('p1');
      s.rec.take();
      s.clock.advance(60_000 + GRACE);
      expect(s.rec.take()).toEqual(['kill p1']);
      s.core.onJobEnded('p1', {
        final: 'CANCELED',
        message: 'job 7 was cancelled (scancel)',
        exitCode: 0,
        signal: 'SIGKILL',
        stderr: '',
      });
      expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
      expect(p.reason?.code).toBe('E_RUNTIME_EXCEEDED');
      expect(p.reason?.message).toBe(
        `the agent outlived its runtime limit (1 min) by ${GRACE} ms and was killed: job 7 was cancelled (scancel)`,
      );
      s.rec.expectNoMore();
    });

    it.each(['PMGR_ACTIVE_PENDING', 'PMGR_ACTIVE'] as const)(
      'ends FAILED with the batch system’s reason and the stderr tail (in %s)',
      (state) => {
        const s = setup();
        const p = queued(s);
        if (state === 'PMGR_ACTIVE') s.core.onAgentReady('p1');
        s.rec.take();
        s.core.onJobEnded('p1', {
          final: 'FAILED',
          message: 'job 7 ended TIMEOUT (Reason=TimeLimit, ExitCode=0:15)',
          exitCode: 0,
          signal: 'SIGTERM',
          stderr: 'a\nb\nc\nslurmstepd: error: *** JOB 7 CANCELLED DUE TO TIME LIMIT ***\n',
        });
        expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
        expect(p.reason).toEqual({
          code: 'E_JOB_FAILED',
          message:
            'job 7 ended TIMEOUT (Reason=TimeLimit, ExitCode=0:15): b | c | slurmstepd: error: *** JOB 7 CANCELLED DUE TO TIME LIMIT ***',
          component: 'PilotLauncher',
          detail: { exitCode: 0, signal: 'SIGTERM' },
        });
        s.rec.expectNoMore();
      },
    );

    it('fails a job that can never start with the batch system’s reason', () => {
      const s = setup();
      const p = queued(s);
      s.core.onJobEnded('p1', {
        final: 'FAILED',
        message: 'job 7 can never start: Slurm keeps it PENDING with Reason=PartitionNodeLimit',
        exitCode: 0,
        signal: null,
        stderr: '',
      });
      expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
      expect(p.reason?.message).toBe(
        'job 7 can never start: Slurm keeps it PENDING with Reason=PartitionNodeLimit',
      );
      s.rec.expectNoMore();
    });

    it('fails, not DONE, a job that COMPLETED without its agent ever reporting in', () => {
      const s = setup();
      const p = queued(s);
      s.core.onJobStarted('p1');
      s.core.onJobEnded('p1', JOB_DONE);
      expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
      expect(p.reason?.code).toBe('E_AGENT_DIED');
      s.rec.expectNoMore();
    });

    it('kills a queued job at once on cancel (no agent to shut down) and ends CANCELED', () => {
      const s = setup();
      const p = queued(s);
      s.core.onCancel(['p1']);
      expect(s.rec.take()).toEqual(['kill p1']);
      s.core.onCancel(['p1']);
      s.clock.advance(10 * GRACE);
      s.rec.expectNoMore();
      s.core.onJobEnded('p1', {
        final: 'CANCELED',
        message: 'job 7 was cancelled (scancel)',
        exitCode: 0,
        signal: null,
        stderr: '',
      });
      expect(s.rec.take()).toEqual(['notify p1 CANCELED', 'ended p1 CANCELED']);
      expect(p.reason).toEqual({
        code: 'E_CANCELED',
        message: BY_USER,
        component: 'PilotLauncher',
      });
      s.rec.expectNoMore();
    });

    it('kills at once a job accepted after a cancel that came while it was being submitted', () => {
      const s = setup();
      s.core.onSubmit([pending()]);
      s.rec.take();
      s.core.onCancel(['p1']);
      s.rec.expectNoMore();
      s.core.onLaunched('p1', { queued: true });
      expect(s.rec.take()).toEqual(['notify p1 PMGR_ACTIVE_PENDING', 'kill p1']);
      s.clock.advance(10 * GRACE); // the grace-period kill was dropped
      s.rec.expectNoMore();
      s.core.onJobEnded('p1', { ...JOB_DONE, final: 'CANCELED' });
      expect(s.rec.take()).toEqual(['notify p1 CANCELED', 'ended p1 CANCELED']);
      s.rec.expectNoMore();
    });

    it('shuts a running job’s agent down on cancel and kills the job after the grace', () => {
      const s = setup();
      queued(s);
      s.core.onJobStarted('p1');
      s.core.onAgentReady('p1');
      s.rec.take();
      s.core.onCancel(['p1']);
      expect(s.rec.take()).toEqual([`shutdownAgent p1 CANCELED ${BY_USER}`]);
      s.clock.advance(GRACE);
      expect(s.rec.take()).toEqual(['kill p1']);
      s.core.onJobEnded('p1', { ...JOB_DONE, final: 'CANCELED' });
      expect(s.rec.take()).toEqual(['notify p1 CANCELED', 'ended p1 CANCELED']);
      expect(s.clock.pending()).toBe(0);
      s.rec.expectNoMore();
    });

    it('ignores job events for pilots it does not hold, and after the end', () => {
      const s = setup();
      queued(s);
      s.core.onJobEnded('p1', { ...JOB_DONE, final: 'CANCELED' });
      s.rec.take();
      s.core.onJobStarted('p1');
      s.core.onJobEnded('p1', JOB_DONE);
      s.core.onLaunched('p1', { queued: true });
      s.core.onJobStarted('nobody');
      s.core.onJobEnded('nobody', JOB_DONE);
      s.rec.expectNoMore();
    });
  });

  describe('hand-over', () => {
    const others = PILOT_STATES.filter((st) => st !== 'PMGR_LAUNCHING_PENDING');

    it('receives a pilot in PMGR_LAUNCHING_PENDING and walks it through every state it owns', () => {
      const s = setup();
      activate(s);
      s.core.onAgentFinal('p1', 'DONE', 'ok');
      s.core.onAgentExited('p1', EXIT_0);
      expect(['PMGR_LAUNCHING_PENDING', ...s.notes.map((n) => n.state)]).toEqual([
        'PMGR_LAUNCHING_PENDING',
        'PMGR_LAUNCHING',
        'PMGR_ACTIVE_PENDING',
        'PMGR_ACTIVE',
        'DONE',
      ]);
      s.rec.take();
      s.rec.expectNoMore();
    });

    it.each(others)('throws IllegalTransitionError for a pilot handed over in %s', (state) => {
      const s = setup();
      const p = pilotIn(state);
      expect(() => s.core.onSubmit([p])).toThrow(IllegalTransitionError);
      expect(p.state).toBe(state);
      expect(s.core.active).toEqual([]);
      s.rec.expectNoMore();
    });

    it('rejects a bulk holding a pilot in another state without touching any of it', () => {
      const s = setup();
      const ok = pending('ok');
      const wrong = pilotIn('NEW', { uid: 'wrong' });
      let err: unknown;
      try {
        s.core.onSubmit([ok, wrong]);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(IllegalTransitionError);
      expect(err).toMatchObject({ from: 'NEW', to: 'PMGR_LAUNCHING', component: 'PilotLauncher' });
      expect(ok.state).toBe('PMGR_LAUNCHING_PENDING');
      expect(s.core.active).toEqual([]);
      s.core.onLaunched('ok'); // it was never taken in
      s.rec.expectNoMore();
    });
  });

  describe('onAdopt (a resumed client takes a pilot back)', () => {
    it('follows an ACTIVE pilot again: its end decides its final state, the runtime backstop counts from its start', () => {
      const s = setup();
      const p = pilotIn('PMGR_ACTIVE', {
        uid: 'p1',
        sandbox: '/sandbox/p1',
        description: { resource: 'local', runtimeMin: 1, agent: { clientTimeoutS: HEARD } },
      });
      s.core.onAdopt(p, { launched: true, queued: false, startedAt: s.clock.now() - 30_000 });
      s.rec.expectNoMore();
      expect(s.core.active).toEqual(['p1']);
      // started 30 s ago with a 60 s limit: killed 30 s + grace (5 s) from now
      s.clock.advance(34_999);
      s.rec.expectNoMore();
      s.clock.advance(1);
      expect(s.rec.take()).toEqual(['kill p1']);
    });

    it('an adopted agent that said its last word and vanished (exit status unknown) ends as it said', () => {
      const s = setup();
      s.core.onAdopt(pilotIn('PMGR_ACTIVE', { uid: 'p1', sandbox: '/s' }), {
        launched: true,
        queued: false,
      });
      s.core.onAgentFinal('p1', 'DONE', 'runtime limit of 1 min reached');
      s.core.onAgentExited('p1', { exitCode: null, signal: null, stderr: '' });
      expect(s.rec.take()).toEqual(['notify p1 DONE', 'ended p1 DONE']);
    });

    it('one that ended while no client heard it ends with the reason it left in its sandbox', () => {
      const s = setup();
      s.core.onAdopt(pilotIn('PMGR_ACTIVE', { uid: 'p1', sandbox: '/s' }), {
        launched: true,
        queued: false,
      });
      const message = "lost the client: no heartbeat for 900 s (the pilot's agent.clientGraceS)";
      s.core.onAgentExited('p1', {
        exitCode: null,
        signal: null,
        stderr: '',
        said: { final: 'FAILED', message },
      });
      expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
      expect(s.ended[0]!.reason).toMatchObject({ code: 'E_PILOT_ENDED', message });
    });

    it('one that vanished without a word fails, saying its exit status is unknown', () => {
      const s = setup();
      s.core.onAdopt(pilotIn('PMGR_ACTIVE', { uid: 'p1', sandbox: '/s' }), {
        launched: true,
        queued: false,
      });
      s.core.onAgentExited('p1', { exitCode: null, signal: null, stderr: '' });
      expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
      expect(s.ended[0]!.reason?.message).toMatch(/exit status unknown/);
    });

    it('moves a pilot caught in PMGR_LAUNCHING with a trace of its agent on to PMGR_ACTIVE_PENDING, then ACTIVE when it reports in', () => {
      const s = setup();
      s.core.onAdopt(pilotIn('PMGR_LAUNCHING', { uid: 'p1', sandbox: '/s' }), {
        launched: true,
        queued: false,
      });
      expect(s.rec.take()).toEqual(['notify p1 PMGR_ACTIVE_PENDING']);
      s.core.onAgentReady('p1');
      expect(s.rec.take()).toEqual(['notify p1 PMGR_ACTIVE']);
    });

    it('fails a pilot whose launch left no trace (the client died launching it)', () => {
      const s = setup();
      s.core.onAdopt(pilotIn('PMGR_LAUNCHING', { uid: 'p1', sandbox: '/s' }), {
        launched: false,
        queued: false,
      });
      expect(s.rec.take()).toEqual(['notify p1 FAILED', 'ended p1 FAILED']);
      expect(s.ended[0]!.reason?.message).toMatch(/client died while launching/);
    });
  });
});

describe('PilotLauncherCore: an agent that stops answering', () => {
  function silentAfter(limitS: number) {
    const s = setup();
    const p = pending();
    p.description.agent = { clientTimeoutS: limitS };
    s.core.onSubmit([p]);
    s.core.onLaunched('p1');
    s.core.onAgentReady('p1');
    s.rec.take();
    return s;
  }

  it('fails the pilot and kills its agent once no heartbeat came for the limit, not before', () => {
    const s = silentAfter(3);
    for (let i = 0; i < 5; i++) {
      s.clock.advance(1_000);
      s.core.onAgentHeartbeat('p1');
    }
    s.clock.advance(2_999);
    s.rec.expectNoMore();
    s.clock.advance(1);
    expect(s.rec.take()).toEqual(['kill p1', 'notify p1 FAILED', 'ended p1 FAILED']);
    expect(s.ended[0]!.reason).toEqual({
      code: 'E_AGENT_SILENT',
      message: 'the agent stopped answering: no heartbeat for 3 s (limit 3 s); it was killed',
      component: 'PilotLauncher',
      detail: { silentMs: 3_000 },
    });
    // its exit, when the kill lands, changes nothing
    s.core.onAgentExited('p1', { exitCode: null, signal: 'SIGKILL', stderr: '' });
    expect(s.clock.pending()).toBe(0);
    s.rec.expectNoMore();
  });

  it('tells an agent heard after its pilot was declared lost to stop, every 5 s while heard', () => {
    const s = silentAfter(3);
    s.clock.advance(3_000);
    expect(s.rec.take()).toEqual(['kill p1', 'notify p1 FAILED', 'ended p1 FAILED']);
    // the kill did not reach it (a node cut off): it comes back and speaks
    s.core.onAgentHeartbeat('p1');
    const told = s.rec.take();
    expect(told).toEqual([expect.stringMatching(/^shutdownAgent p1 FAILED/)]);
    expect(told[0]).toContain('its tasks were taken over');
    s.clock.advance(1_000);
    s.core.onAgentHeartbeat('p1');
    s.core.onAgentReady('p1');
    s.rec.expectNoMore();
    s.clock.advance(4_000);
    s.core.onAgentReady('p1');
    expect(s.rec.take()).toEqual([expect.stringMatching(/^shutdownAgent p1 FAILED/)]);
    // nothing else about the pilot changes
    expect(s.clock.pending()).toBe(0);
  });

  it('after a stall of the client itself, reads the heartbeats that waited before judging', () => {
    const s = silentAfter(3);
    s.clock.stall(60_000); // the client was stopped: the watchdog fires late
    s.rec.expectNoMore();
    s.core.onAgentHeartbeat('p1'); // the agent was alive: its heartbeats are read now
    s.clock.advance(2_999);
    s.rec.expectNoMore();
    s.clock.advance(1);
    expect(s.rec.take()).toEqual(['kill p1', 'notify p1 FAILED', 'ended p1 FAILED']);
  });

  it('fails an agent that never reports in, a limit after it was started', () => {
    const s = setup();
    s.core.onSubmit([pending()]);
    s.core.onLaunched('p1');
    s.rec.take();
    s.clock.advance(29_999);
    s.rec.expectNoMore();
    s.clock.advance(1);
    expect(s.rec.take()).toEqual(['kill p1', 'notify p1 FAILED', 'ended p1 FAILED']);
    expect(s.ended[0]!.reason?.code).toBe('E_AGENT_SILENT');
  });

  it('watches an adopted active pilot from the adoption, a whole limit later', () => {
    const s = setup();
    const p = pilotIn('PMGR_ACTIVE', { uid: 'p1', description: { resource: 'local' } });
    s.core.onAdopt(p, { launched: true, queued: false, startedAt: s.clock.now() });
    s.clock.advance(29_999);
    s.rec.expectNoMore();
    s.clock.advance(1);
    expect(s.rec.take()).toEqual(['kill p1', 'notify p1 FAILED', 'ended p1 FAILED']);
  });
});

describe('PilotLauncherCore: an active pilot whose agent is silent shows as unknown', () => {
  const ok = (silentParts: { part: string; since: number }[] = []) => ({
    uid: 'p1',
    state: 'ok',
    silentParts,
  });
  const unknown = (since: number, silentParts: { part: string; since: number }[] = []) => ({
    uid: 'p1',
    state: 'unknown',
    since,
    silentParts,
  });

  it('is unknown after 3 s without a heartbeat, since the last one, and ok once heard again', () => {
    const s = setup();
    activate(s);
    for (let i = 0; i < 5; i++) {
      s.clock.advance(1_000);
      s.core.onAgentHeartbeat('p1', []);
    }
    const heard = s.clock.now();
    s.clock.advance(2_999);
    expect(s.lives).toEqual([]);
    s.clock.advance(1);
    expect(s.lives.splice(0)).toEqual([unknown(heard)]);
    s.clock.advance(5_000); // said once, not again while it stays silent
    expect(s.lives).toEqual([]);
    s.core.onAgentHeartbeat('p1', []);
    expect(s.lives.splice(0)).toEqual([ok()]);
    // silent again: since its latest heartbeat
    const again = s.clock.now();
    s.clock.advance(3_000);
    expect(s.lives.splice(0)).toEqual([unknown(again)]);
    s.rec.expectNoMore();
  });

  it('stays unknown until declared lost at the limit (30 s), then nothing more is watched', () => {
    const s = setup();
    activate(s);
    const heard = s.clock.now();
    s.clock.advance(3_000);
    expect(s.lives.splice(0)).toEqual([unknown(heard)]);
    s.clock.advance(26_999);
    s.rec.expectNoMore();
    s.clock.advance(1);
    expect(s.rec.take()).toEqual(['kill p1', 'notify p1 FAILED', 'ended p1 FAILED']);
    expect(s.ended[0]!.reason?.code).toBe('E_AGENT_SILENT');
    expect(s.lives).toEqual([]);
    expect(s.clock.pending()).toBe(0);
  });

  it('with a short clientTimeoutS (3 s), is unknown at half of it (1.5 s), before it is lost', () => {
    const s = setup();
    const p = pending();
    p.description.agent = { clientTimeoutS: 3 };
    s.core.onSubmit([p]);
    s.core.onLaunched('p1');
    s.core.onAgentReady('p1');
    s.rec.take();
    const heard = s.clock.now();
    s.clock.advance(1_499);
    expect(s.lives).toEqual([]);
    s.clock.advance(1);
    expect(s.lives.splice(0)).toEqual([unknown(heard)]);
    s.rec.expectNoMore();
    s.clock.advance(1_500);
    expect(s.rec.take()).toEqual(['kill p1', 'notify p1 FAILED', 'ended p1 FAILED']);
  });

  it('is not judged before the pilot is active (an agent starting up), only lost at the limit', () => {
    const s = setup();
    s.core.onSubmit([pending()]);
    s.core.onLaunched('p1');
    s.rec.take();
    s.clock.advance(29_999);
    expect(s.lives).toEqual([]);
    // it reports in late: from then on its silence shows
    s.core.onAgentReady('p1');
    s.rec.take();
    s.clock.advance(3_000);
    expect(s.lives.splice(0)).toEqual([unknown(s.clock.now() - 3_000)]);
  });

  it('shows the parts its heartbeats say are silent, while the pilot is ok, as they change', () => {
    const s = setup();
    activate(s);
    const n3 = { part: 'sub-agent n3', since: s.clock.now() - 4_000 };
    const n5 = { part: 'sub-agent n5', since: s.clock.now() - 1_000 };
    s.core.onAgentHeartbeat('p1', [n3]);
    expect(s.lives.splice(0)).toEqual([ok([n3])]);
    s.clock.advance(1_000);
    s.core.onAgentHeartbeat('p1', [{ ...n3 }]); // the same list: nothing new
    s.core.onAgentReady('p1'); // not a heartbeat: the list stands
    expect(s.lives).toEqual([]);
    s.core.onAgentHeartbeat('p1', [n3, n5]);
    expect(s.lives.splice(0)).toEqual([ok([n3, n5])]);
    // the agent itself goes silent: its last list is kept with it
    const heard = s.clock.now();
    s.clock.advance(3_000);
    expect(s.lives.splice(0)).toEqual([unknown(heard, [n3, n5])]);
    // heard again, with every part back
    s.core.onAgentHeartbeat('p1', []);
    expect(s.lives.splice(0)).toEqual([ok()]);
    s.rec.expectNoMore();
  });

  it('after a stall of the client itself, reads the heartbeats that waited before judging', () => {
    const s = setup();
    activate(s);
    s.clock.stall(10_000); // the watchdog fires late: it looks again a second later
    s.core.onAgentHeartbeat('p1', []); // the agent was alive: its heartbeats are read now
    s.clock.advance(2_999);
    expect(s.lives).toEqual([]);
    s.clock.advance(1);
    expect(s.lives.splice(0)).toEqual([unknown(s.clock.now() - 3_000)]);
  });

  it('watches an adopted active pilot from its adoption', () => {
    const s = setup();
    const p = pilotIn('PMGR_ACTIVE', { uid: 'p1', description: { resource: 'local' } });
    const adopted = s.clock.now();
    s.core.onAdopt(p, { launched: true, queued: false, startedAt: adopted - 60_000 });
    s.clock.advance(3_000);
    expect(s.lives.splice(0)).toEqual([unknown(adopted)]);
    s.rec.expectNoMore();
  });

  it('stops watching a pilot that ends', () => {
    const s = setup();
    activate(s);
    s.core.onCancel(['p1']);
    s.core.onAgentExited('p1', EXIT_0);
    s.rec.take();
    s.clock.advance(60_000);
    expect(s.lives).toEqual([]);
    expect(s.clock.pending()).toBe(0);
  });
});
