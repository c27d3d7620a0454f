import { cpuList, launchOptionsFor, type LaunchOptions } from '../../components/executor/launch';
import type { Logger } from '../../lib/logger';
import type { Allocation } from './allocation';
import { cpuIdsFor, readMachine, resourceWarnings } from './machine';

export interface LaunchSetup {
  launch: LaunchOptions;
  /** What the user must know about the pilot's resources, already logged (warn), said once. */
  warnings: string[];
}

/**
 * How the agent's tasks start, decided once at start: the machine's CPUs (pinning) and what the
 * pilot declares beyond them, and what the allocation adds (Allocation.launch: a step launcher,
 * perhaps probed with a few commands bounded by `timeoutMs` each). Logs each finding once.
 */
export async function launchSetup(
  allocation: Allocation,
  log: Logger,
  timeoutMs = 20_000,
): Promise<LaunchSetup> {
  const { node, nodes } = allocation;
  const machine = readMachine();
  const warnings = resourceWarnings(
    nodes.find((n) => n.name === node),
    machine,
  );
  log.info('agent machine', { node, cpus: cpuList(machine.cpus), gpus: machine.gpus });
  for (const warning of warnings) log.warn('pilot resources beyond the machine', { warning });
  const found = await allocation.launch({ log, timeoutMs });
  warnings.push(...found.warnings);
  const launch = launchOptionsFor({
    uid: process.getuid?.(),
    cpuIds: cpuIdsFor(nodes, machine),
    allocation: found.options,
  });
  return { launch, warnings };
}
