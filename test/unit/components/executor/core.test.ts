import { describe, expect, it } from '@jest/globals';
import { ExecutorCore } from '../../../../src/components/executor/core';
import type { ExecutorOptions } from '../../../../src/components/executor/core';
import type { ExecutorJob, SpawnSpec } from '../../../../src/components/executor/effects';
import { IllegalTransitionError } from '../../../../src/errors';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import { CoreHarness, taskRecord } from '../../../support/core-harness';

const GRACE = 1_000;

/** Where task() runs, as its notifications say. */
const ONE_SLOT = [{ node: 'n0', cores: [0], gpus: [] }];

function task(uid: string, desc: Partial<TaskDescription> = {}): TaskRecord {
  return taskRecord(uid, 'AGENT_EXECUTING_PENDING', {
    session: 'sess.1',
    pilot: 'pilot.1',
    sandbox: `/sb/${uid}`,
    slots: [{ node: 'n0', cores: [0], gpus: [] }],
    description: { executable: '/bin/echo', arguments: ['hi'], ...desc },
  });
}

function setup(opts: Partial<ExecutorOptions> = {}) {
  const h = new CoreHarness();
  const specs: SpawnSpec[] = [];
  const effects = h.effects({
    // where a task goes next depends on its state, so record that too
    forward: (ts: TaskRecord[]) =>
      h.rec.record(`forward ${ts.map((t) => `${t.uid} ${t.state}`).join(', ')}`),
    release: h.uids('release'),
    start: (job: ExecutorJob) => {
      if (job.kind !== 'process') throw new Error(`a ${job.kind} job in the process tests`);
      specs.push(job.spec);
      h.rec.record(`start ${job.spec.uid}`);
    },
    stop: (uid: string, how: string) => h.rec.record(`stop ${uid} ${how}`),
    signal: (uid: string, signal: string) => h.rec.record(`signal ${uid} ${signal}`),
  });
  const core = new ExecutorCore(effects, h.clock, { killGraceMs: GRACE, ...opts });
  /** Starts tasks and checks (then drops) the effects of their start. */
  const started = (...tasks: TaskRecord[]): void => {
    core.onTasks(tasks);
    expect(h.rec.take()).toEqual([
      ...tasks.map((t) => `start ${t.uid}`),
      `notify ${tasks.map((t) => `${t.uid} AGENT_EXECUTING`).join(', ')}`,
    ]);
  };
  return Object.assign(h, { specs, core, started });
}

describe('ExecutorCore', () => {
  it('starts a process with only the override env, the sandbox as cwd and output files in it', () => {
    const { rec, specs, core, started } = setup();
    const t = task('t1', {
      environment: { FOO: 'bar', PF_RANK: 'user-value', CUDA_VISIBLE_DEVICES: '0,1,2,3' },
    });
    started(t);
    expect(t.state).toBe('AGENT_EXECUTING');
    expect(core.held()).toBe(1);
    expect(specs).toEqual([
      {
        uid: 't1',
        executable: '/bin/echo',
        args: ['hi'],
        env: {
          FOO: 'bar',
          PF_TASK_ID: 't1',
          PF_PILOT_ID: 'pilot.1',
          PF_SESSION_ID: 'sess.1',
          PF_TASK_SANDBOX: '/sb/t1',
          PF_TASK_ATTEMPT: '1',
          PF_RANK: '0',
          OMP_NUM_THREADS: '1',
          PF_RANKS: '1',
          PF_GPUS: '', // no GPUs in the slot: none visible, whatever the description says
          CUDA_VISIBLE_DEVICES: '',
        },
        cwd: '/sb/t1',
        limits: { pids: 4096 }, // the default: a fork bomb stays in its task
        stdoutPath: '/sb/t1/stdout',
        stderrPath: '/sb/t1/stderr',
      },
    ]);
    rec.expectNoMore();
  });

  it('runs in the workdir when one is given and exposes the slot GPUs', () => {
    const { rec, specs, started } = setup();
    const t = task('t1', { workdir: '/data', arguments: [] });
    t.slots = [{ node: 'n0', cores: [0], gpus: [2, 3] }];
    started(t);
    expect(specs[0]?.cwd).toBe('/data');
    expect(specs[0]?.args).toEqual([]);
    expect(specs[0]?.env.CUDA_VISIBLE_DEVICES).toBe('2,3');
    expect(specs[0]?.env.PF_GPUS).toBe('2,3');
    rec.expectNoMore();
  });

  it('starts a task of several ranks under mpirun with a hostfile from its slots', () => {
    const { rec, specs, started } = setup({
      launch: { mpirun: '/opt/mpi/bin/mpirun', asRoot: true },
    });
    const t = task('t1', { ranks: 2 });
    t.slots = [
      { node: 'n0', cores: [0], gpus: [0] },
      { node: 'n1', cores: [0], gpus: [1] },
    ];
    started(t);
    const [spec] = specs;
    expect(spec?.executable).toBe('/opt/mpi/bin/mpirun');
    expect(spec?.args.slice(0, 5)).toEqual([
      '--allow-run-as-root',
      '-np',
      '2',
      '--hostfile',
      '/sb/t1/mpi-hostfile',
    ]);
    expect(spec?.args.slice(-3)).toEqual(['pf-rank', '/bin/echo', 'hi']);
    expect(spec?.env.PF_RANK_GPUS).toBe('0;1');
    expect(spec?.files).toEqual([
      {
        path: '/sb/t1/mpi-hostfile',
        content:
          '# pilotfish task t1: line i is the host of rank i (mpirun --map-by seq)\nn0\nn1\n',
      },
    ]);
    expect(spec?.cwd).toBe('/sb/t1');
    rec.expectNoMore();
  });

  it('inside a Slurm allocation forks a rank on its own node and runs the rest under srun', () => {
    const { rec, specs, started } = setup({
      launch: { agentNode: { name: 'n0' }, srun: { executable: '/opt/slurm/bin/srun' } },
    });
    const here = task('t1');
    const there = task('t2');
    there.slots = [{ node: 'n1', cores: [0], gpus: [] }];
    started(here, there);
    expect(specs.map((s) => s.executable)).toEqual(['/bin/echo', '/opt/slurm/bin/srun']);
    expect(specs[1]?.args).toContain('--nodelist=n1'); // one node: no hostfile
    expect(specs.map((s) => s.killScope)).toEqual([undefined, 'process']);
    rec.expectNoMore();
  });

  it("fails a task of several ranks that asks for launch 'fork', without spawning it", () => {
    const { rec, notes, specs, core } = setup();
    const t = task('t1', { ranks: 3, launch: 'fork' });
    core.onTasks([t, task('t2')]);
    expect(rec.take()).toEqual(['start t2', 'notify t1 FAILED, t2 AGENT_EXECUTING', 'release t1']);
    const reason = {
      code: 'E_LAUNCH_METHOD',
      message: "launch 'fork' runs one rank; this task asks 3 ranks: use 'mpirun'",
      component: 'Executor',
      detail: { launch: 'fork', ranks: 3 },
    };
    expect(t.reason).toEqual(reason);
    expect(notes[0]?.detail).toEqual({ reason });
    expect(specs.map((s) => s.uid)).toEqual(['t2']);
    expect(core.held()).toBe(1);
    rec.expectNoMore();
  });

  it('names mpirun, not the task executable, when mpirun cannot be started', () => {
    const { rec, core, started } = setup();
    const t = task('t1', { launch: 'mpirun', executable: '/bin/hostname', arguments: [] });
    started(t);
    core.onStartFailed('t1', { code: 'ENOENT', message: 'no such file or directory' });
    expect(rec.take()).toEqual([
      'notify t1 AGENT_STAGING_OUTPUT_PENDING',
      'forward t1 AGENT_STAGING_OUTPUT_PENDING',
      'release t1',
    ]);
    expect(t.reason).toEqual({
      code: 'E_EXEC_NOT_FOUND',
      message:
        "cannot execute the launcher 'mpirun' of '/bin/hostname': no such file or directory (ENOENT)",
      component: 'Executor',
      detail: { errno: 'ENOENT', launcher: 'mpirun' },
    });
    rec.expectNoMore();
  });

  it.each([0, 3])('hands a task that exited with %i on to output staging', (code) => {
    const { rec, notes, core, started } = setup();
    const t = task('t1');
    started(t);
    core.onStarted('t1', { pid: 4242, t: 1000.5 });
    core.onExitedBulk([{ uid: 't1', exitCode: code, signal: null, t: 1002.25 }]);
    expect(rec.take()).toEqual([
      'notify t1 AGENT_STAGING_OUTPUT_PENDING',
      'forward t1 AGENT_STAGING_OUTPUT_PENDING',
      'release t1',
    ]);
    expect(t.exitCode).toBe(code);
    expect(t.signal).toBeNull();
    expect(t.reason).toBeUndefined();
    // where it ran and when its command ran, as the spawner measured: the profile's facts
    expect(notes.at(-1)?.detail).toEqual({
      exitCode: code,
      signal: null,
      slots: ONE_SLOT,
      launched: 1000.5,
      exited: 1002.25,
    });
    expect(notes.find((n) => n.state === 'AGENT_EXECUTING')?.detail).toEqual({ slots: ONE_SLOT });
    expect(core.held()).toBe(0);
    core.onExited('t1', { exitCode: code, signal: null }); // duplicate: ignored
    rec.expectNoMore();
  });

  it.each([
    ['ENOENT', 'E_EXEC_NOT_FOUND', 'no such file or directory'],
    ['EACCES', 'E_EXEC_PERMISSION', 'permission denied'],
    ['ENOEXEC', 'E_EXEC_FAILED', 'not an executable format'],
  ])('reports a spawn failure %s as %s with a readable reason', (errno, code, text) => {
    const { rec, notes, core, started } = setup();
    const t = task('t1', { executable: '/no/such/bin' });
    started(t);
    core.onStartFailed('t1', { code: errno, message: text });
    expect(rec.take()).toEqual([
      'notify t1 AGENT_STAGING_OUTPUT_PENDING',
      'forward t1 AGENT_STAGING_OUTPUT_PENDING',
      'release t1',
    ]);
    const reason = {
      code,
      message: `cannot execute '/no/such/bin': ${text} (${errno})`,
      component: 'Executor',
      detail: { errno },
    };
    expect(t.reason).toEqual(reason);
    expect(t.exitCode).toBeNull();
    expect(notes.at(-1)?.detail).toEqual({ exitCode: null, signal: null, reason, slots: ONE_SLOT });
    rec.expectNoMore();
  });

  it('names the lost pid when the spawner dies under a running task', () => {
    const { rec, core, started } = setup();
    const t = task('t1');
    started(t);
    core.onStartedBulk([{ uid: 't1', pid: 77 }]);
    core.onStartFailedBulk([{ uid: 't1', code: 'E_SPAWNER_DIED', message: 'the helper died' }]);
    expect(rec.take()).toEqual([
      'notify t1 AGENT_STAGING_OUTPUT_PENDING',
      'forward t1 AGENT_STAGING_OUTPUT_PENDING',
      'release t1',
    ]);
    expect(t.reason?.code).toBe('E_EXEC_FAILED');
    expect(t.reason?.message).toBe("lost '/bin/echo' (pid 77): the helper died (E_SPAWNER_DIED)");
    rec.expectNoMore();
  });

  it('fails a task whose preExec line failed with the reason its status file gives', () => {
    const { rec, notes, core, started } = setup();
    const t = task('t1', { preExec: ['module load gcc'] });
    started(t);
    const steps = [{ rank: 0, step: 'pre' as const, index: 0, code: 3 }];
    core.onExitedBulk([{ uid: 't1', exitCode: 3, signal: null, steps }]);
    expect(rec.take()).toEqual([
      'notify t1 AGENT_STAGING_OUTPUT_PENDING',
      'forward t1 AGENT_STAGING_OUTPUT_PENDING',
      'release t1',
    ]);
    const reason = {
      code: 'E_PRE_EXEC',
      message: "preExec[0] 'module load gcc' failed with exit code 3: the executable did not run",
      component: 'Executor',
      detail: { exitCode: 3, preExec: 0, line: 'module load gcc' },
    };
    expect(t.reason).toEqual(reason);
    expect(notes.at(-1)?.detail).toEqual({ exitCode: 3, signal: null, reason, slots: ONE_SLOT });
    rec.expectNoMore();
  });

  it('keeps a streamed task whose output was not all written as its exit says, with a warning of what was lost', () => {
    const { rec, core, started } = setup();
    const t = task('t1');
    t.output = 'stream';
    started(t);
    const lost =
      "cannot write the output stream '/p/output/spawner.0.0.pfout': no space left on device (ENOSPC)";
    const output = { stdout: 'hi\n', stderr: '', stdoutBytes: 3, stderrBytes: 0, lost };
    core.onExitedBulk([{ uid: 't1', exitCode: 0, signal: null, output }]);
    rec.take();
    expect(t.stdout).toBe('hi\n'); // its tails came with its exit all the same
    expect(t.reason).toBeUndefined(); // its exit code decides, later: 0 is DONE, never a retry
    expect(t.outputLost).toBe(lost);
    // what a cap dropped is kept too; without either, nothing is said
    const capped = task('t2');
    started(capped);
    const { lost: _lost, ...whole } = output;
    core.onExitedBulk([{ uid: 't2', exitCode: 0, signal: null, output: { ...whole, dropped: 7 } }]);
    expect([capped.reason, capped.outputLost, capped.outputDropped]).toEqual([
      undefined,
      undefined,
      7,
    ]);
  });

  it('names the shell, not the executable, when the shell of a task with preExec cannot start', () => {
    const { core, started } = setup();
    const t = task('t1', { preExec: ['true'] });
    started(t);
    core.onStartFailed('t1', { code: 'ENOENT', message: 'no such file or directory' });
    expect(t.reason).toMatchObject({
      code: 'E_EXEC_NOT_FOUND',
      message:
        "cannot execute the shell '/bin/sh' of '/bin/echo': no such file or directory (ENOENT)",
      detail: { errno: 'ENOENT', launcher: '/bin/sh' },
    });
  });

  it('keeps a timeout as the reason of a task whose postExec then failed', () => {
    const { rec, clock, core, started } = setup();
    const t = task('t1', { postExec: ['false'], timeoutS: 1 });
    started(t);
    clock.advance(1_000);
    expect(rec.take()).toEqual(['stop t1 term']);
    const steps = [{ rank: 0, step: 'post' as const, index: 0, code: 1 }];
    core.onExitedBulk([{ uid: 't1', exitCode: 1, signal: null, steps }]);
    rec.take();
    expect(t.reason?.code).toBe('E_TASK_TIMEOUT');
  });

  it('sends SIGTERM at timeoutS and SIGKILL after the grace period, not before', () => {
    const { rec, clock, notes, core, started } = setup();
    const t = task('t1', { timeoutS: 2 });
    started(t);
    clock.advance(1_999);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()).toEqual(['stop t1 term']);
    clock.advance(GRACE - 1);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()).toEqual(['stop t1 kill']);
    core.onExited('t1', { exitCode: null, signal: 'SIGKILL' });
    expect(rec.take()).toEqual([
      'notify t1 AGENT_STAGING_OUTPUT_PENDING',
      'forward t1 AGENT_STAGING_OUTPUT_PENDING',
      'release t1',
    ]);
    const reason = {
      code: 'E_TASK_TIMEOUT',
      message: 'task ran longer than its timeoutS of 2 s and was killed',
      component: 'Executor',
      detail: { timeoutS: 2 },
    };
    expect(t.reason).toEqual(reason);
    expect(notes.at(-1)?.detail).toEqual({
      exitCode: null,
      signal: 'SIGKILL',
      reason,
      slots: ONE_SLOT,
    });
    expect(clock.pending()).toBe(0);
    rec.expectNoMore();
  });

  it('sends no SIGKILL when the task exits within the grace period', () => {
    const { rec, clock, core, started } = setup();
    started(task('t1', { timeoutS: 1 }));
    clock.advance(1_000);
    expect(rec.take()).toEqual(['stop t1 term']);
    core.onExited('t1', { exitCode: null, signal: 'SIGTERM' });
    expect(rec.take()).toEqual([
      'notify t1 AGENT_STAGING_OUTPUT_PENDING',
      'forward t1 AGENT_STAGING_OUTPUT_PENDING',
      'release t1',
    ]);
    clock.advance(10 * GRACE);
    rec.expectNoMore();
  });

  it('cancels the timeout when the task exits in time', () => {
    const { rec, clock, core, started } = setup();
    started(task('t1', { timeoutS: 5 }));
    core.onExited('t1', { exitCode: 0, signal: null });
    rec.take();
    expect(clock.pending()).toBe(0);
    clock.advance(60_000);
    rec.expectNoMore();
  });

  it('cancels a task on arrival when its cancel came first', () => {
    const { rec, notes, core } = setup();
    core.onCancel(['t1']);
    rec.expectNoMore();
    const t1 = task('t1');
    core.onTasks([t1, task('t2')]);
    expect(rec.take()).toEqual([
      'start t2',
      'notify t1 CANCELED, t2 AGENT_EXECUTING',
      'release t1',
    ]);
    expect(t1.canceled).toBe(true);
    expect(notes[0]?.detail?.reason).toEqual({
      code: 'E_CANCELED',
      message: 'task was canceled before it started',
      component: 'Executor',
    });
    expect(core.held()).toBe(1);
    rec.expectNoMore();
  });

  it('kills a running task on cancel and ends it CANCELED once it exits', () => {
    const { rec, clock, notes, core, started } = setup();
    const t = task('t1', { timeoutS: 100 });
    started(t);
    core.onCancel(['t1']);
    expect(rec.take()).toEqual(['stop t1 term']);
    core.onCancel(['t1']); // again: nothing new
    clock.advance(GRACE - 1);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()).toEqual(['stop t1 kill']);
    core.onExited('t1', { exitCode: null, signal: 'SIGKILL' });
    expect(rec.take()).toEqual(['notify t1 CANCELED', 'release t1']);
    expect(t.state).toBe('CANCELED');
    expect(notes.at(-1)?.detail).toEqual({
      exitCode: null,
      signal: 'SIGKILL',
      slots: ONE_SLOT,
      reason: {
        code: 'E_CANCELED',
        message: 'task was canceled while it ran',
        component: 'Executor',
      },
    });
    clock.advance(200_000); // the timeout no longer fires
    rec.expectNoMore();
  });

  it('ends a canceled task CANCELED when its spawn then fails', () => {
    const { rec, core, started } = setup();
    const t = task('t1');
    started(t);
    core.onCancel(['t1']);
    expect(rec.take()).toEqual(['stop t1 term']);
    core.onStartFailed('t1', { code: 'ENOENT', message: 'no such file or directory' });
    expect(rec.take()).toEqual(['notify t1 CANCELED', 'release t1']);
    expect(t.reason?.code).toBe('E_CANCELED');
    rec.expectNoMore();
  });

  it('does nothing when a cancel comes after the exit', () => {
    const { rec, core, started } = setup();
    const t = task('t1');
    started(t);
    core.onExited('t1', { exitCode: 0, signal: null });
    rec.take();
    core.onCancel(['t1']);
    expect(t.state).toBe('AGENT_STAGING_OUTPUT_PENDING');
    expect(t.canceled).toBeUndefined();
    rec.expectNoMore();
  });

  it('on shutdown kills everything, finalizes every held task at once and ignores late exits', () => {
    const { rec, notes, core, started } = setup();
    const [t1, t2] = [task('t1'), task('t2')];
    started(t1, t2);
    core.onCancel(['t2']);
    expect(rec.take()).toEqual(['stop t2 term']);
    const why = { code: 'E_PILOT_ENDED' as const, message: 'pilot ended', component: 'Agent' };
    core.onShutdown('FAILED', why);
    expect(rec.take()).toEqual([
      'stop t1 kill',
      'stop t2 kill',
      'notify t1 FAILED, t2 CANCELED',
      'release t1, t2',
    ]);
    expect(notes.at(-2)?.detail).toEqual({ reason: why });
    expect(t1.reason).toEqual(why);
    expect(t2.reason?.code).toBe('E_CANCELED');
    expect(core.held()).toBe(0);
    core.onExitedBulk([
      { uid: 't1', exitCode: null, signal: 'SIGKILL' },
      { uid: 't2', exitCode: null, signal: 'SIGKILL' },
    ]);
    rec.expectNoMore();
    const late = task('t3');
    core.onTasks([late]);
    expect(rec.take()).toEqual(['notify t3 FAILED', 'release t3']);
    expect(late.reason).toEqual(why);
    rec.expectNoMore();
  });

  describe('an exit by a signal the Executor did not send (a batch system cancel)', () => {
    const HOLD = 250;
    const why = { code: 'E_PILOT_ENDED' as const, message: 'pilot ended', component: 'Agent' };

    it('is held for the grace period, then settles as any exit', () => {
      const { rec, clock, core, started } = setup();
      const t = task('t1', { timeoutS: 100 });
      started(t);
      core.onExited('t1', { exitCode: null, signal: 'SIGTERM' });
      core.onExited('t1', { exitCode: null, signal: 'SIGTERM' }); // duplicate: ignored
      clock.advance(HOLD - 1);
      rec.expectNoMore();
      expect(core.held()).toBe(1);
      clock.advance(1);
      expect(rec.take()).toEqual([
        'notify t1 AGENT_STAGING_OUTPUT_PENDING',
        'forward t1 AGENT_STAGING_OUTPUT_PENDING',
        'release t1',
      ]);
      expect(t.signal).toBe('SIGTERM');
      expect(clock.pending()).toBe(0); // the timeout went with it
      rec.expectNoMore();
    });

    it('ends the task with the shutdown when the shutdown comes first, with no kill', () => {
      const { rec, clock, core, started } = setup();
      const t = task('t1');
      started(t);
      core.onExitedBulk([{ uid: 't1', exitCode: null, signal: 'SIGTERM' }]);
      clock.advance(HOLD - 1);
      core.onShutdown('FAILED', why);
      expect(rec.take()).toEqual(['notify t1 FAILED', 'release t1']);
      expect(t.reason).toEqual(why);
      clock.advance(10 * HOLD);
      rec.expectNoMore();
    });

    it('ends CANCELED when a cancel comes during the hold, without stopping a process', () => {
      const { rec, clock, core, started } = setup();
      const t = task('t1');
      started(t);
      core.onExited('t1', { exitCode: null, signal: 'SIGKILL' });
      core.onCancel(['t1']);
      rec.expectNoMore();
      clock.advance(HOLD);
      expect(rec.take()).toEqual(['notify t1 CANCELED', 'release t1']);
      rec.expectNoMore();
    });

    it('is not held when the Executor sent the signal (cancel), nor with a grace of 0', () => {
      const { rec, core, started } = setup();
      started(task('t1'));
      core.onCancel(['t1']);
      expect(rec.take()).toEqual(['stop t1 term']);
      core.onExited('t1', { exitCode: null, signal: 'SIGTERM' });
      expect(rec.take()).toEqual(['notify t1 CANCELED', 'release t1']);

      const graceless = setup({ signaledExitGraceMs: 0 });
      graceless.started(task('t2'));
      graceless.core.onExited('t2', { exitCode: null, signal: 'SIGTERM' });
      expect(graceless.rec.take()).toEqual([
        'notify t2 AGENT_STAGING_OUTPUT_PENDING',
        'forward t2 AGENT_STAGING_OUTPUT_PENDING',
        'release t2',
      ]);
    });
  });

  it('fails a task whose mode has no executor kind, naming the modes it runs', () => {
    const { rec, core } = setup();
    const t = task('t1');
    (t.description as { mode?: string }).mode = 'quantum'; // allowed by a newer schema
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t1 FAILED', 'release t1']);
    expect(t.reason).toEqual({
      code: 'E_MODE_UNSUPPORTED',
      message:
        "this agent cannot run tasks of mode 'quantum': it runs 'executable', 'function', 'service'",
      component: 'Executor',
      detail: { mode: 'quantum', modes: ['executable', 'function', 'service'] },
    });
    rec.expectNoMore();
  });

  it('fails a task that arrives without a sandbox', () => {
    const { rec, core } = setup();
    const t = task('t1');
    delete t.sandbox;
    core.onTasks([t]);
    expect(rec.take()).toEqual(['notify t1 FAILED', 'release t1']);
    expect(t.reason?.code).toBe('E_NO_SANDBOX');
    rec.expectNoMore();
  });

  it('rejects a bulk holding a task in another state without touching any of it', () => {
    const { rec, core } = setup();
    const ok = task('t1');
    const wrong = { ...task('t2'), state: 'AGENT_SCHEDULING' as const };
    expect(() => core.onTasks([ok, wrong])).toThrow(IllegalTransitionError);
    expect(ok.state).toBe('AGENT_EXECUTING_PENDING');
    expect(core.held()).toBe(0);
    rec.expectNoMore();
  });

  it('releases slots exactly once whatever events repeat or cross', () => {
    const { rec, clock, core, started } = setup();
    started(task('a', { timeoutS: 1 }), task('b'), task('c'));
    clock.advance(1_000);
    core.onCancel(['a', 'b']);
    core.onExitedBulk([
      { uid: 'a', exitCode: null, signal: 'SIGTERM' },
      { uid: 'b', exitCode: null, signal: 'SIGTERM' },
      { uid: 'a', exitCode: null, signal: 'SIGTERM' },
    ]);
    core.onStartFailedBulk([{ uid: 'b', code: 'EIO', message: 'x' }]);
    core.onExited('c', { exitCode: 0, signal: null });
    core.onExited('c', { exitCode: 0, signal: null });
    core.onShutdown('FAILED', { code: 'E_PILOT_ENDED', message: 'm', component: 'Agent' });
    const releases = rec.take().filter((c) => c.startsWith('release '));
    expect(releases).toEqual(['release a, b', 'release c']);
    rec.expectNoMore();
  });

  it('makes one notify, one forward and one release call for a bulk', () => {
    const { rec, notes, core } = setup();
    const n = 200;
    const tasks = Array.from({ length: n }, (_, i) => task(`t${i}`));
    core.onTasks(tasks);
    const calls = rec.take();
    expect(calls.filter((c) => c.startsWith('start '))).toHaveLength(n);
    expect(calls.filter((c) => c.startsWith('notify '))).toHaveLength(1);
    expect(notes).toHaveLength(n);
    core.onStartedBulk(tasks.map((t, i) => ({ uid: t.uid, pid: 1000 + i })));
    rec.expectNoMore();
    core.onExitedBulk(tasks.map((t) => ({ uid: t.uid, exitCode: 0, signal: null })));
    expect(rec.take().map((c) => c.split(' ')[0])).toEqual(['notify', 'forward', 'release']);
    expect(notes).toHaveLength(2 * n);
    expect(core.held()).toBe(0);
    rec.expectNoMore();
  });
});

describe('ExecutorCore, follow-on starts (task.follows)', () => {
  it('times a follower from its own start, and says who followed whom', () => {
    const { rec, clock, notes, core, started } = setup();
    const a = task('a');
    const b = { ...task('b', { timeoutS: 2 }), follows: 'a' };
    started(a, b);
    expect(notes.find((n) => n.uid === 'b')?.detail).toEqual({ slots: ONE_SLOT, follows: 'a' });
    clock.advance(5_000); // b is queued behind a: its timeoutS has not begun
    rec.expectNoMore();
    core.onExitedBulk([{ uid: 'a', exitCode: 0, signal: null, t: 100 }]);
    expect(notes.at(-1)?.detail).toMatchObject({ exited: 100, followed: true });
    core.onStartedBulk([{ uid: 'b', pid: 42, t: 101 }]);
    rec.take();
    clock.advance(1_999);
    rec.expectNoMore();
    clock.advance(1);
    expect(rec.take()).toEqual(['stop b term']);
  });

  it('a follower whose predecessor has already ended leaves it unmarked', () => {
    const { rec, notes, core, started } = setup();
    started(task('a'));
    core.onExitedBulk([{ uid: 'a', exitCode: 0, signal: null }]);
    rec.take();
    started({ ...task('b'), follows: 'a' });
    expect(notes.filter((n) => n.detail?.followed === true)).toEqual([]);
  });
});

describe('ExecutorCore, a canceled follow-on start', () => {
  it('ends CANCELED "before it started" when its helper dropped it from its queue', () => {
    const { rec, notes, core, started } = setup();
    started(task('a'), { ...task('b'), follows: 'a' });
    core.onCancel(['b']);
    expect(rec.take()).toEqual(['stop b term']);
    core.onStartFailedBulk([
      { uid: 'b', code: 'ECANCELED', message: 'canceled before it started' },
    ]);
    expect(rec.take()).toEqual(['notify b CANCELED', 'release b']);
    expect(notes.at(-1)?.detail?.reason?.message).toBe('task was canceled before it started');
    expect(core.held()).toBe(1); // a runs on
  });
});
