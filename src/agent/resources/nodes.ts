import * as os from 'node:os';
import type { AgentConfig } from '../../generated';
import type { NodeResources } from '../../components/agent-scheduler/node-state';
import { slurmNodes } from './slurm-env';

/** The node the agent runs on, as its scheduler names it. */
export function agentNodeName(cfg: AgentConfig): string {
  return cfg.resource === 'slurm' ? (process.env.SLURMD_NODENAME ?? os.hostname()) : os.hostname();
}

/** The nodes this agent holds: its own machine, or the nodes of its Slurm job. */
export function discoverNodes(cfg: AgentConfig): NodeResources[] {
  if (cfg.resource === 'slurm') {
    return slurmNodes(process.env, {
      gpusPerNode: cfg.gpus,
      ...(cfg.memMb !== undefined ? { memMbPerNode: cfg.memMb } : {}),
    });
  }
  // memory the pilot gives to tasks: as configured, else the machine's
  const memMb = cfg.memMb ?? Math.floor(os.totalmem() / 2 ** 20);
  return [{ name: agentNodeName(cfg), cores: cfg.cores, gpus: cfg.gpus, memMb }];
}
