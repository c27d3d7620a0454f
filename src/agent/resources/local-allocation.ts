import type { Allocation, AllocationSite } from './allocation';

/**
 * The machine the agent runs on, outside any batch system: one node named by its host name,
 * with the cores and GPUs of the config and its memory (the config's, else the machine's); no
 * end of its own (the pilot's runtime limit still applies) and no step launcher (fork and
 * mpirun start tasks). Pure.
 */
export function localAllocation(site: AllocationSite): Allocation {
  const { cfg, hostname } = site;
  // memory the pilot gives to tasks: as configured, else the machine's
  const memMb = cfg.memMb ?? site.memMb;
  return {
    node: hostname,
    nodes: [{ name: hostname, cores: cfg.cores, gpus: cfg.gpus, memMb }],
    jobEnd: () => Promise.resolve(undefined),
    launch: () => Promise.resolve({ options: {}, warnings: [] }),
  };
}
