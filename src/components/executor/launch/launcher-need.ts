import type { TaskRecord } from '../../../generated';
import { launchMethodOf } from './registry';

/**
 * Whether a placed task (its slots set) starts a launcher process (srun, mpirun) that lives as
 * long as it runs: every task but a forked one or a function call (warm workers run those).
 * The agent's scheduler caps such tasks (agent.launchers); the simulator asks the same. It
 * follows launchMethodOf, given the same allocation options.
 */
export function needsLauncher(
  task: TaskRecord,
  allocation?: Parameters<typeof launchMethodOf>[1],
): boolean {
  return task.description.mode !== 'function' && launchMethodOf(task, allocation) !== 'fork';
}
