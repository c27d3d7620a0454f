import * as os from 'node:os';
import type { AgentConfig } from '../../generated';
import type { Allocation, AllocationKind, AllocationSite } from './allocation';
import { localAllocation } from './local-allocation';
import { slurmAllocation } from './slurm-allocation';

/** An allocation reader for every batch system: the mapped type makes a missing one a compile error. */
export type AllocationRegistry = {
  readonly [K in AllocationKind]: (site: AllocationSite) => Allocation;
};

/**
 * One allocation per `resource` of the agent config schema (registry.test.ts checks the keys
 * against the schema's enum).
 */
export const ALLOCATIONS: AllocationRegistry = {
  local: localAllocation,
  slurm: (site) => slurmAllocation(site),
};

/**
 * The allocation the agent runs in, read once at its start from its config (an unset
 * `resource` is the local machine) and this process's environment and machine.
 *
 * @throws ValidationError when the allocation's environment is missing or malformed.
 */
export function readAllocation(cfg: AgentConfig, env: NodeJS.ProcessEnv = process.env): Allocation {
  return ALLOCATIONS[cfg.resource ?? 'local']({
    cfg,
    env,
    hostname: os.hostname(),
    memMb: Math.floor(os.totalmem() / 2 ** 20),
  });
}
