import { describe, expect, it } from '@jest/globals';
import {
  RANK_WRAPPER,
  RANK_WRAPPERS,
  STEPS_SCRIPT,
  SRUN_RANK_WRAPPER,
  parseStepStatus,
  stepsReason,
  taskSteps,
  type StepFailure,
} from '../../../../../src/components/executor/launch';
import { OPTS, launched, slot, task } from './helpers';

const ARGV = ['/bin/app', 'a b', "it's"];

describe('preExec and postExec in the launch', () => {
  it('leaves a task without them (or with empty lists) as it was: no shell in between', () => {
    for (const d of [{}, { preExec: [], postExec: [] }]) {
      expect(taskSteps(task(d).description)).toBeUndefined();
      const l = launched(task(d, [slot('n0', [0])]));
      expect([l.executable, ...l.args]).toEqual(ARGV);
    }
  });

  it('forks the shell that runs them, lines and argv passed as arguments, never quoted', () => {
    const pre = ['export FOO="a b"', 'source venv/bin/activate'];
    const post = ["echo 'done'"];
    const l = launched(task({ preExec: pre, postExec: post }, [slot('n0', [0])]));
    expect(l.method).toBe('fork');
    expect(l.executable).toBe('/bin/sh');
    expect(l.args).toEqual([
      '-c',
      STEPS_SCRIPT,
      'pf-exec',
      `${OPTS.workDir}/exec-status`,
      '1',
      ...post,
      '2',
      ...pre,
      ...ARGV,
    ]);
  });

  it('runs them in each rank under mpirun and srun, inside the rank wrapper', () => {
    const slots = [slot('n0', [0]), slot('n0', [1])];
    const t = task({ ranks: 2, preExec: ['module load x'] }, slots);
    const m = launched(t);
    const tail = [`${OPTS.workDir}/exec-status`, '0', '1', 'module load x', ...ARGV];
    expect(m.args.slice(m.args.indexOf('/bin/sh'))).toEqual([
      '/bin/sh',
      '-c',
      RANK_WRAPPERS.steps,
      'pf-rank',
      ...tail,
    ]);
    // the same prologue (rank, GPUs, pinning), then the script instead of the exec
    expect(RANK_WRAPPERS.steps).toBe(RANK_WRAPPER.replace(/exec "\$@"$/, STEPS_SCRIPT));
    const slurm = { ...OPTS, agentNode: { name: 'n0' }, srun: { executable: 'srun' } };
    const s = launched({ ...t, description: { ...t.description, launch: 'srun' } }, slurm);
    const wrapper = s.args[s.args.indexOf('/bin/sh') + 2];
    expect(wrapper).toBe(SRUN_RANK_WRAPPER.replace(/exec "\$@"$/, STEPS_SCRIPT));
    expect(s.args.slice(s.args.indexOf('pf-rank') + 1)).toEqual(tail);
  });
});

describe('parseStepStatus', () => {
  it('reads the first line of a status file', () => {
    expect(parseStepStatus('pre 2 1\n', 0)).toEqual({ rank: 0, step: 'pre', index: 2, code: 1 });
    expect(parseStepStatus('exe - 3\npost 0 1\n', 4)).toEqual({ rank: 4, step: 'exe', code: 3 });
    expect(parseStepStatus('exec - 127\nexe - 127\n', 0)?.step).toBe('exec');
  });

  it('names nothing for an empty file or one it did not write', () => {
    for (const text of ['', '\n', 'pre x 1\n', 'hello world 1\n', 'pre 1\n']) {
      expect(parseStepStatus(text, 0)).toBeUndefined();
    }
  });
});

describe('stepsReason', () => {
  const desc = { preExec: ['module load gcc', 'exit 0'], postExec: ['cp out /x'] };
  const one = task(desc);
  const f = (step: StepFailure['step'], code: number, index?: number, rank = 0): StepFailure =>
    index === undefined ? { rank, step, code } : { rank, step, index, code };

  it('fails a failing preExec line with E_PRE_EXEC, naming the line, its text and its code', () => {
    expect(stepsReason(one, [f('pre', 3, 0)])).toEqual({
      code: 'E_PRE_EXEC',
      message: "preExec[0] 'module load gcc' failed with exit code 3: the executable did not run",
      component: 'Executor',
      detail: { exitCode: 3, preExec: 0, line: 'module load gcc' },
    });
    expect(stepsReason(one, [f('pre', 0, 1)])?.message).toBe(
      "preExec[1] 'exit 0' left the shell: the executable did not run",
    );
  });

  it('fails a failing postExec line with E_POST_EXEC', () => {
    expect(stepsReason(one, [f('post', 1, 0)])).toEqual({
      code: 'E_POST_EXEC',
      message: "postExec[0] 'cp out /x' failed with exit code 1",
      component: 'Executor',
      detail: { exitCode: 1, postExec: 0, line: 'cp out /x' },
    });
  });

  it("leaves the executable's own exit to the exit code, a postExec failure after it included", () => {
    expect(stepsReason(one, [f('exe', 2), f('post', 1, 0)])).toBeUndefined();
    expect(stepsReason(one, [])).toBeUndefined();
  });

  it('tells a missing or non-executable executable from an exit code', () => {
    const r = stepsReason(task({ executable: '/no/app', preExec: ['true'] }), [f('exec', 127)]);
    expect(r).toEqual({
      code: 'E_EXEC_NOT_FOUND',
      message: "cannot execute '/no/app': not found (the shell's exec exited 127)",
      component: 'Executor',
      detail: { exitCode: 127 },
    });
    expect(stepsReason(one, [f('exec', 126)])?.code).toBe('E_EXEC_PERMISSION');
  });

  it('takes, across ranks, a preExec before an exec, an exit and a postExec, then the lowest rank', () => {
    const many = task({ ...desc, ranks: 4 });
    const failures = [f('post', 1, 0, 0), f('exe', 143, undefined, 1), f('pre', 1, 0, 3)];
    failures.push(f('pre', 2, 0, 2));
    expect(stepsReason(many, failures)).toMatchObject({
      code: 'E_PRE_EXEC',
      message:
        "preExec[0] 'module load gcc' failed with exit code 2 on rank 2: the executable did not run",
      detail: { rank: 2, exitCode: 2 },
    });
    expect(stepsReason(many, [f('post', 1, 0, 3), f('exe', 143, undefined, 1)])).toBeUndefined();
  });

  it('cuts a long line in the message, keeping it whole in the detail', () => {
    const long = `echo ${'x'.repeat(300)}`;
    const r = stepsReason(task({ postExec: [long] }), [f('post', 1, 0)]);
    expect(r?.message).toBe(`postExec[0] '${long.slice(0, 200)}...' failed with exit code 1`);
    expect(r?.detail).toMatchObject({ line: long });
  });
});
