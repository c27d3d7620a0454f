import type { AgentConfig } from '../../generated';
import type { NodeResources } from '../../components/agent-scheduler/node-state';
import { cpuList, launchOptionsFor, type LaunchOptions } from '../../components/executor/launch';
import type { Logger } from '../../lib/logger';
import { cpuIdsFor, readMachine, resourceWarnings } from './machine';
import { probeMpi } from './mpi-probe';
import { agentNodeName } from './nodes';
import { serviceHost } from './service-host';

export interface LaunchSetup {
  launch: LaunchOptions;
  /** What the user must know about the pilot's resources, already logged (warn), said once. */
  warnings: string[];
}

/**
 * How the agent's tasks start, decided once at start: the machine's CPUs (pinning) and what the
 * pilot declares beyond them, and under Slurm the PMI plug-in of its srun steps (probed: a few
 * commands and a one-rank step, bounded by `timeoutMs` each). Logs each finding once.
 */
export async function launchSetup(
  cfg: AgentConfig,
  nodes: readonly NodeResources[],
  log: Logger,
  timeoutMs = 20_000,
): Promise<LaunchSetup> {
  const nodeName = agentNodeName(cfg);
  const machine = readMachine();
  const warnings = resourceWarnings(
    nodes.find((n) => n.name === nodeName),
    machine,
  );
  log.info('agent machine', { node: nodeName, cpus: cpuList(machine.cpus), gpus: machine.gpus });
  for (const warning of warnings) log.warn('pilot resources beyond the machine', { warning });
  let mpi: string | undefined;
  if (cfg.resource === 'slurm') {
    const choice = await probeMpi({
      srun: 'srun',
      node: nodeName,
      env: process.env,
      timeoutMs,
      ...(cfg.mpi !== undefined ? { requested: cfg.mpi } : {}),
    });
    mpi = choice.mpi;
    log.info('srun mpi plug-in', {
      mpi: mpi ?? "(Slurm's default)",
      why: choice.why,
      ...choice.facts,
    });
    if (choice.warning !== undefined) {
      warnings.push(choice.warning);
      log.warn('MPI programs started by srun may fail', { warning: choice.warning });
    }
  }
  const launch = launchOptionsFor({
    resource: cfg.resource,
    env: process.env,
    uid: process.getuid?.(),
    nodeName,
    hostName: await serviceHost(cfg.addresses.managerOutput),
    mpi,
    cpuIds: cpuIdsFor(nodes, machine),
  });
  return { launch, warnings };
}
