import type { Reason } from '../../../generated';
import { COMPONENTS } from '../../../states/task-model';
import type { FunctionCall, FunctionJob } from '../effects';
import { baseEnv, gpuList, slotCpus } from '../launch/ranks';
import { workdirOf } from '../../shared/workdir';
import type { ExecutorKind } from './kind';

const EXECUTOR = COMPONENTS.executor;

const CODE_BY_PHASE = {
  import: 'E_FUNCTION_IMPORT',
  call: 'E_FUNCTION_THREW',
  encode: 'E_FUNCTION_RESULT',
} as const;

/**
 * mode 'function': a call of the task's function in the warm worker of its slot (one worker per
 * core of the agent's node, the one of the slot's first core), with the slot's PF_* variables.
 */
export const functionKind: ExecutorKind<FunctionJob> = {
  mode: 'function',

  prepare(task, sandbox, launch) {
    const f = task.description.function;
    const slot = task.slots?.[0];
    if (f === undefined) {
      // the schema requires it with this mode: a record that lacks it was not validated
      return {
        ok: false,
        reason: reason('E_MODE_UNSUPPORTED', 'a function task without its function'),
      };
    }
    const agentNode = launch.agentNode?.name;
    if (agentNode !== undefined && slot !== undefined && slot.node !== agentNode) {
      return {
        ok: false,
        reason: reason(
          'E_LAUNCH_METHOD',
          `function tasks run in the workers of the agent's node '${agentNode}'; this task's slot is on '${slot.node}'`,
          { node: slot.node, agentNode },
        ),
      };
    }
    const env = baseEnv(task, 1, sandbox);
    const gpus = gpuList(slot?.gpus);
    env.PF_RANK = '0';
    env.PF_GPUS = gpus;
    env.CUDA_VISIBLE_DEVICES = gpus;
    const cpus = slotCpus(slot, launch.cpuIds);
    if (cpus !== '') env.PF_CPUS = cpus;
    const call: FunctionCall = {
      uid: task.uid,
      module: f.module,
      env,
      worker: slot?.cores[0] ?? 0,
      attempt: task.attempt, // its output's frames name it
    };
    const cap = task.description.outputCapBytes;
    if (cap !== undefined) call.outputCap = cap;
    if (f.language === 'python') call.language = 'python';
    if (f.export !== undefined) call.export = f.export;
    if (f.args !== undefined) call.args = f.args;
    call.cwd = workdirOf(task.description, sandbox, launch.pilotSandbox ?? sandbox);
    return { ok: true, job: { kind: 'function', call } };
  },

  exitReason(task, exit) {
    const e = exit.error;
    if (e === undefined) return undefined;
    const what = `${task.description.function?.module ?? '?'}${task.description.function?.export !== undefined ? `#${task.description.function.export}` : ''}`;
    const message =
      e.phase === 'import'
        ? `cannot import ${what}: ${e.name}: ${e.message}`
        : e.phase === 'encode'
          ? `the value ${what} returned cannot be carried back: ${e.message}`
          : `${what} threw ${e.name}: ${e.message}`;
    const detail: Record<string, unknown> = { name: e.name };
    if (e.stack !== undefined) detail.stack = e.stack;
    return reason(CODE_BY_PHASE[e.phase], message, detail);
  },

  startFailure(task, _job, f, pid): Reason {
    // the pool's workers cannot start: its message names the interpreter, the worker's error
    // and the fix (FunctionRunner), the same for every call of that language
    if (f.code === 'E_WORKER_START') return reason('E_WORKER_START', f.message);
    const what = task.description.function?.module ?? '?';
    // a worker died under the call (replaced since), or the pilot closed
    const code = f.code === 'E_WORKER_DIED' ? 'E_WORKER_DIED' : 'E_EXEC_FAILED';
    return reason(code, `the call of ${what} was lost: ${f.message}`, {
      cause: f.code,
      ...(pid !== undefined ? { pid } : {}),
    });
  },
};

function reason(code: Reason['code'], message: string, detail?: Record<string, unknown>): Reason {
  return { code, message, component: EXECUTOR, ...(detail !== undefined ? { detail } : {}) };
}
