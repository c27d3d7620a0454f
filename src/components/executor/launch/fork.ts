import type { TaskRecord } from '../../../generated';
import { launchFailure, type Launch, type LaunchMethodPlugin, type LaunchOptions } from './method';
import { gpuList, slotCpus } from './ranks';
import { STEPS_SCRIPT, executableOf, stepsArgv, taskSteps } from './steps';

/**
 * The slot's node, when the task runs in an allocation on another node than the agent's and
 * that node has no sub-agent to fork it.
 */
function elsewhere(task: TaskRecord, opts: LaunchOptions): string | undefined {
  const node = task.slots?.[0]?.node;
  return opts.agentNode !== undefined &&
    node !== undefined &&
    node !== opts.agentNode.name &&
    opts.subAgentNodes?.has(node) !== true
    ? node
    : undefined;
}

/**
 * One rank on the agent's node: the task's own executable, per-rank variables set directly; a
 * task with preExec or postExec runs under the shell that runs them (steps.ts).
 */
export const fork: LaunchMethodPlugin = {
  name: 'fork',

  suits: (task, ranks, opts) => ranks === 1 && elsewhere(task, opts) === undefined,

  build({ task, ranks, env, opts }) {
    if (ranks > 1) {
      return launchFailure(
        'E_LAUNCH_METHOD',
        `launch 'fork' runs one rank; this task asks ${ranks} ranks: use '${opts.srun === undefined ? 'mpirun' : 'srun'}'`,
        { launch: 'fork', ranks },
      );
    }
    const node = elsewhere(task, opts);
    if (node !== undefined && opts.agentNode !== undefined) {
      const agentNode = opts.agentNode.name;
      return launchFailure(
        'E_LAUNCH_METHOD',
        `launch 'fork' runs on the agent's node '${agentNode}'; this task's slot is on '${node}': use '${opts.srun === undefined ? 'mpirun' : 'srun'}'`,
        { launch: 'fork', node, agentNode },
      );
    }
    const gpus = gpuList(task.slots?.[0]?.gpus);
    // the spawner pins the process (Launch.cpus) before it runs the task's code
    const cpus = slotCpus(task.slots?.[0], opts.cpuIds);
    env.PF_RANK = '0';
    env.PF_GPUS = gpus;
    env.CUDA_VISIBLE_DEVICES = gpus;
    // unpinned: no PF_CPUS (a delete only when the description set one: V8 slows on deletes)
    if (cpus !== '') env.PF_CPUS = cpus;
    else if (Object.hasOwn(env, 'PF_CPUS')) delete env.PF_CPUS;
    const d = task.description;
    const steps = taskSteps(d);
    const launch: Launch =
      steps === undefined
        ? { method: 'fork', executable: executableOf(d), args: d.arguments ?? [], env, files: [] }
        : {
            // preExec and postExec run in the shell that starts the executable (steps.ts)
            method: 'fork',
            executable: '/bin/sh',
            args: ['-c', STEPS_SCRIPT, 'pf-exec', ...stepsArgv(steps, opts.workDir, d)],
            env,
            files: [],
          };
    if (cpus !== '') launch.cpus = cpus;
    return { ok: true, launch };
  },
};
