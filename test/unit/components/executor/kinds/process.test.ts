import { describe, expect, it } from '@jest/globals';
import { processKind } from '../../../../../src/components/executor/kinds/process';
import type { ProcessJob } from '../../../../../src/components/executor/effects';
import type { TaskRecord } from '../../../../../src/generated';
import { slot } from '../launch/helpers';

const PILOT = '/sb';

function exeTask(sandbox: string, more: Partial<TaskRecord['description']> = {}): TaskRecord {
  return {
    uid: 't1',
    attempt: 1,
    state: 'AGENT_EXECUTING_PENDING',
    session: 'sess.1',
    pilot: 'pilot.1',
    sandbox,
    output: 'stream',
    slots: [slot('n0', [0])],
    description: { executable: '/bin/true', ...more },
  };
}

function specOf(task: TaskRecord): ProcessJob['spec'] {
  const r = processKind.prepare(task, task.sandbox!, {
    mpirun: 'mpirun',
    asRoot: false,
    pilotSandbox: PILOT,
  });
  if (!r.ok) throw new Error(r.reason.message);
  return r.job.spec;
}

describe('processKind: working directories', () => {
  it('runs a task in its own directory, which its spawner helper makes (mkdir)', () => {
    const s = specOf(exeTask('/sb/t1'));
    expect([s.cwd, s.mkdir, s.env.PF_TASK_SANDBOX]).toEqual(['/sb/t1', '/sb/t1', '/sb/t1']);
  });

  it("runs one in workdir 'pilot' (or sandbox: false) in the pilot's sandbox, making nothing", () => {
    for (const more of [{ workdir: 'pilot' }, { sandbox: false }]) {
      const s = specOf(exeTask(PILOT, more));
      expect([s.cwd, s.mkdir, s.env.PF_TASK_SANDBOX]).toEqual([PILOT, undefined, PILOT]);
    }
  });

  it("keeps the own directory of one in workdir 'pilot' that needs one (output 'files'), running it in the pilot's", () => {
    const t = { ...exeTask('/sb/t1', { workdir: 'pilot' }), output: 'files' as const };
    const s = specOf(t);
    expect([s.cwd, s.mkdir, s.stdoutPath]).toEqual([PILOT, '/sb/t1', '/sb/t1/stdout']);
  });

  it("lets its helper keep a streamed task's own directory as a spare when it would be removed (recycle)", () => {
    expect(specOf(exeTask('/sb/t1')).recycle).toBe(true);
    // output 'files' puts stdout and stderr in it; sandbox: true keeps it; output directives
    // stage from it; workdir 'pilot' makes none
    expect(specOf({ ...exeTask('/sb/t1'), output: 'files' }).recycle).toBeUndefined();
    expect(specOf(exeTask('/sb/t1', { sandbox: true })).recycle).toBeUndefined();
    const staged = { outputStaging: [{ source: 'task://out', target: 'client:///tmp/out' }] };
    expect(specOf(exeTask('/sb/t1', staged)).recycle).toBeUndefined();
    expect(specOf(exeTask(PILOT, { workdir: 'pilot' })).recycle).toBeUndefined();
  });

  it('runs one with an absolute workdir there', () => {
    expect(specOf(exeTask(PILOT, { workdir: '/data/run' })).cwd).toBe('/data/run');
  });

  it('fails a task whose directory its helper could not make with E_STAGING, naming it', () => {
    const t = exeTask('/sb/t1');
    const job: ProcessJob = { kind: 'process', spec: specOf(t), method: 'fork' };
    const message = "cannot make the task directory '/sb/t1': permission denied";
    expect(processKind.startFailure(t, job, { code: 'EACCES', message }, undefined)).toEqual({
      code: 'E_STAGING',
      message: `cannot create the task sandbox: ${message} (EACCES)`,
      component: 'Executor',
      detail: { errno: 'EACCES' },
    });
  });
});
