import { describe, expect, it } from '@jest/globals';
import { functionKind } from '../../../../../src/components/executor/kinds/function';
import type { TaskRecord } from '../../../../../src/generated';
import { slot } from '../launch/helpers';

/** A function task t1 on pilot.1 in the slot `s`. */
function fnTask(
  s = slot('n0', [3], [1]),
  more: Partial<TaskRecord['description']> = {},
): TaskRecord {
  return {
    uid: 't1',
    attempt: 2,
    state: 'AGENT_EXECUTING_PENDING',
    session: 'sess.1',
    pilot: 'pilot.1',
    sandbox: '/sb/t1',
    slots: [s],
    description: {
      mode: 'function',
      function: { module: '/m/score.js', export: 'score', args: [7] },
      ...more,
    },
  };
}

describe('functionKind', () => {
  it("calls the function in the worker of its slot's first core, with the slot's variables", () => {
    const cpuIds = new Map([['n0', [0, 2, 4, 6]]]);
    const r = functionKind.prepare(fnTask(), '/sb/t1', { cpuIds, mpirun: 'mpirun', asRoot: false });
    expect(r).toEqual({
      ok: true,
      job: {
        kind: 'function',
        call: {
          uid: 't1',
          module: '/m/score.js',
          export: 'score',
          args: [7],
          cwd: '/sb/t1',
          worker: 3,
          attempt: 2, // the frames of its output name it
          env: expect.objectContaining({
            PF_TASK_ID: 't1',
            PF_TASK_ATTEMPT: '2',
            PF_TASK_SANDBOX: '/sb/t1',
            PF_RANK: '0',
            PF_RANKS: '1',
            PF_GPUS: '1',
            CUDA_VISIBLE_DEVICES: '1',
            PF_CPUS: '6',
          }),
        },
      },
    });
  });

  it("carries its task's own output cap", () => {
    const r = functionKind.prepare(fnTask(undefined, { outputCapBytes: 4096 }), '/sb/t1', {
      mpirun: 'mpirun',
      asRoot: false,
    });
    expect(r.ok && r.job.call.outputCap).toBe(4096);
  });

  it("refuses a slot on another node than the agent's (its workers run on the agent's node)", () => {
    const r = functionKind.prepare(fnTask(slot('n2', [0])), '/sb/t1', {
      mpirun: 'mpirun',
      asRoot: false,
      agentNode: { name: 'n1' },
      srun: { executable: 'srun' },
    });
    expect(r).toMatchObject({ ok: false, reason: { code: 'E_LAUNCH_METHOD' } });
    expect(!r.ok && r.reason.message).toContain("agent's node 'n1'; this task's slot is on 'n2'");
  });

  it('words what a call threw, what it could not import and what it could not carry back', () => {
    const t = fnTask();
    const exit = (phase: 'import' | 'call' | 'encode', name: string, message: string) =>
      functionKind.exitReason!(t, {
        uid: 't1',
        exitCode: 1,
        signal: null,
        error: { name, message, phase, stack: `${name}: ${message}\n    at score` },
      });
    expect(exit('call', 'TypeError', 'x is undefined')).toEqual({
      code: 'E_FUNCTION_THREW',
      message: '/m/score.js#score threw TypeError: x is undefined',
      component: 'Executor',
      detail: { name: 'TypeError', stack: 'TypeError: x is undefined\n    at score' },
    });
    expect(exit('import', 'SyntaxError', 'Unexpected token')?.code).toBe('E_FUNCTION_IMPORT');
    expect(exit('encode', 'TypeError', 'result.f: a function cannot be encoded')).toMatchObject({
      code: 'E_FUNCTION_RESULT',
      message:
        'the value /m/score.js#score returned cannot be carried back: result.f: a function cannot be encoded',
    });
    expect(functionKind.exitReason!(t, { uid: 't1', exitCode: 0, signal: null, value: 1 })).toBe(
      undefined,
    );
  });

  it('says a call was lost with its worker', () => {
    const t = fnTask();
    const job = { kind: 'function' as const, call: { uid: 't1', module: 'm', env: {}, worker: 0 } };
    const died = { code: 'E_WORKER_DIED', message: 'the function worker 0 (pid 9) died (SIGABRT)' };
    expect(functionKind.startFailure(t, job, died, 9)).toEqual({
      code: 'E_WORKER_DIED',
      message: 'the call of /m/score.js was lost: the function worker 0 (pid 9) died (SIGABRT)',
      component: 'Executor',
      detail: { cause: 'E_WORKER_DIED', pid: 9 },
    });
    const closed = { code: 'E_POOL_CLOSED', message: 'the function pool was closed' };
    expect(functionKind.startFailure(t, job, closed, undefined).code).toBe('E_EXEC_FAILED');
  });

  it("gives the pool's start failure as its own reason, in the runner's words", () => {
    const t = fnTask();
    const job = { kind: 'function' as const, call: { uid: 't1', module: 'm', env: {}, worker: 0 } };
    const message = "python function workers cannot start (agent.python 'python3'): no msgpack";
    expect(functionKind.startFailure(t, job, { code: 'E_WORKER_START', message }, 9)).toEqual({
      code: 'E_WORKER_START',
      message,
      component: 'Executor',
    });
  });
});
