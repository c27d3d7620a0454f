import { readFileSync } from 'node:fs';
import * as os from 'node:os';
import type { NodeResources } from '../../components/agent-scheduler/node-state';
import { cpuList } from '../../components/executor/launch/ranks';
import { nvidiaGpus } from '../../lib/gpus';

export { nvidiaGpus } from '../../lib/gpus';

/** What the machine the agent runs on has, as far as the agent may use it. */
export interface Machine {
  /** The CPU ids the agent may run on (its affinity), ascending. */
  cpus: readonly number[];
  /** NVIDIA GPUs the driver lists; 0 without the driver. */
  gpus: number;
}

/** The agent's machine, read once at start (a few small files; no process is run). */
export function readMachine(): Machine {
  return { cpus: usableCpus(), gpus: nvidiaGpus() };
}

/**
 * The CPUs this process may run on: Cpus_allowed_list of /proc/self/status (Linux: what a
 * cpuset, taskset or Slurm's task plugin left it), else 0..n-1 for os.cpus().
 */
export function usableCpus(status = '/proc/self/status'): number[] {
  try {
    const line = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync(status, 'utf8'))?.[1];
    const cpus = line === undefined ? [] : parseCpuList(line);
    if (cpus.length > 0) return cpus;
  } catch {
    // not Linux: count the CPUs
  }
  return Array.from({ length: Math.max(1, os.cpus().length) }, (_, i) => i);
}

/** A Linux cpulist (`0-3,8`) → [0, 1, 2, 3, 8]; [] when malformed. */
export function parseCpuList(list: string): number[] {
  const out = new Set<number>();
  for (const part of list.trim().split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return [];
    const lo = Number(m[1]);
    const hi = Number(m[2] ?? m[1]);
    if (hi < lo || hi - lo > 1 << 20) return [];
    for (let c = lo; c <= hi; c++) out.add(c);
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * The CPU ids of each node's cores, for pinning (LaunchOptions.cpuIds): core i is the
 * machine's i-th usable CPU. Every node is taken to be like the agent's (a Slurm pilot holds
 * whole nodes of one kind); a node declaring more cores than that has no map: its ranks run
 * unpinned, since the scheduler's cores there are more than CPUs to pin to.
 */
export function cpuIdsFor(
  nodes: readonly NodeResources[],
  machine: Machine,
): Map<string, readonly number[]> {
  const ids = new Map<string, readonly number[]>();
  for (const n of nodes) if (n.cores <= machine.cpus.length) ids.set(n.name, machine.cpus);
  return ids;
}

/**
 * What the pilot declares beyond the machine, on the agent's node (the one the agent can see):
 * more cores than CPUs it may use (tasks share CPUs and run unpinned), more GPUs than the
 * driver lists. Said once at start; oversubscribing on purpose is allowed.
 */
export function resourceWarnings(node: NodeResources | undefined, machine: Machine): string[] {
  if (node === undefined) return [];
  const warnings: string[] = [];
  const cpus = machine.cpus.length;
  if (node.cores > cpus) {
    warnings.push(
      `the pilot declares ${node.cores} cores on ${node.name}, but the agent may use ${cpus} CPU${cpus === 1 ? '' : 's'} there (${cpuList(machine.cpus)}): tasks share CPUs, and their ranks are not pinned`,
    );
  }
  if (node.gpus > machine.gpus) {
    const found =
      machine.gpus === 0
        ? 'the NVIDIA driver lists none (/proc/driver/nvidia/gpus)'
        : `the NVIDIA driver lists ${machine.gpus}`;
    warnings.push(
      `the pilot declares ${node.gpus} GPU${node.gpus === 1 ? '' : 's'} on ${node.name}, but ${found}: tasks get GPU indices the machine may not have`,
    );
  }
  return warnings;
}
