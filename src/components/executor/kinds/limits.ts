import type { TaskRecord } from '../../../generated';
import type { TaskLimits } from '../process/helper/protocol';
import type { LaunchMethod, TaskLimitDefaults } from '../launch';

/** The pids limit of a task when neither it nor its pilot sets one: generous, but finite. */
export const DEFAULT_PIDS = 4096;

const MIB = 1024 * 1024;

/**
 * The limits of a task's processes on the agent's node (SpawnSpec.limits), from its `limits`,
 * its memPerRankMb and the pilot's agent.taskLimits; undefined when it has none. Only tasks
 * forked on the agent's node: mpirun's and srun's ranks run under their launcher (srun passes
 * memPerRankMb to Slurm).
 */
export function taskLimitsOf(
  task: Pick<TaskRecord, 'description'>,
  method: LaunchMethod,
  defaults: TaskLimitDefaults = {},
): TaskLimits | undefined {
  if (method !== 'fork') return undefined;
  const d = task.description;
  const own = d.limits ?? {};
  const ranks = d.ranks ?? 1;
  const limits: TaskLimits = {};
  const memPerRank = d.memPerRankMb ?? 0;
  const memoryMb =
    own.memoryMb ?? (memPerRank > 0 ? memPerRank * ranks : undefined) ?? defaults.memoryMb;
  if (memoryMb !== undefined) limits.memoryBytes = memoryMb * MIB;
  const pids = own.pids ?? defaults.pids ?? DEFAULT_PIDS;
  if (pids > 0) limits.pids = pids;
  const cpus = own.cpus ?? (defaults.cpus === true ? (d.coresPerRank ?? 1) * ranks : undefined);
  if (cpus !== undefined) limits.cpus = cpus;
  return Object.keys(limits).length === 0 ? undefined : limits;
}
