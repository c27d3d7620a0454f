import type { TaskRecord } from '../../../generated';
import { fork } from './fork';
import type {
  BuildLaunchOptions,
  LaunchMethod,
  LaunchMethodPlugin,
  LaunchOptions,
  LaunchResult,
} from './method';
import { mpirun } from './mpirun';
import { baseEnv } from './ranks';
import { srun } from './srun';

/** Every launch method, by the name a task gives in `launch` (the schema's enum: a test checks). */
export const LAUNCH_METHODS: Readonly<Record<LaunchMethod, LaunchMethodPlugin>> = {
  fork,
  mpirun,
  srun,
};

/** The order in which a task that names no method is offered to each: the first that suits. */
const DEFAULT_ORDER: readonly LaunchMethod[] = ['fork', 'srun', 'mpirun'];

/**
 * The launch method a task gets: its own choice, else, on one machine, mpirun for more than one
 * rank and fork for one; in an allocation with a step launcher, fork for one rank whose slot is
 * on the agent's node (or that has no slot) and srun for the rest.
 */
export function launchMethodOf(
  task: TaskRecord,
  allocation: Pick<LaunchOptions, 'agentNode' | 'srun' | 'subAgentNodes'> = {},
): LaunchMethod {
  const opts: LaunchOptions = { mpirun: 'mpirun', asRoot: false, ...allocation };
  return pick(task, task.description.ranks ?? 1, opts);
}

function pick(task: TaskRecord, ranks: number, opts: LaunchOptions): LaunchMethod {
  const chosen = task.description.launch;
  if (chosen !== undefined) return chosen;
  // mpirun suits every task: the fallback is never reached.
  return DEFAULT_ORDER.find((m) => LAUNCH_METHODS[m].suits(task, ranks, opts)) ?? 'mpirun';
}

/** How the task's ranks start (command line, env, files), or why they cannot. Pure. */
export function buildLaunch(task: TaskRecord, opts: BuildLaunchOptions): LaunchResult {
  const ranks = task.description.ranks ?? 1;
  const method = LAUNCH_METHODS[pick(task, ranks, opts)];
  return method.build({ task, ranks, env: baseEnv(task, ranks, opts.workDir), opts });
}
