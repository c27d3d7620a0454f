import type { PilotNode, PilotProfile, Profile } from './types';

/**
 * A pilot's cores and GPUs numbered as one list of slots: every core of every node, then
 * every GPU of every node. The utilization sweep and the timeline's lanes both use it.
 */
export interface PilotSlots {
  nodes: PilotNode[];
  /** True where the profile did not list the pilot's nodes and they were read off the tasks' slots. */
  inferred: boolean;
  cores: number;
  gpus: number;
  /** The slot of a node's core or GPU, or -1 where the node has no such one. */
  coreSlot(node: string, core: number): number;
  gpuSlot(node: string, gpu: number): number;
  /** The node index of a slot, and whether it is a GPU. */
  nodeOf: Int32Array;
  isGpu: Uint8Array;
  /** The index of a slot within its node (core or GPU number). */
  indexOf: Int32Array;
}

/** The nodes the pilot's tasks held slots on, as wide as the highest index they used. */
function inferNodes(profile: Profile, pilot: string): PilotNode[] {
  const seen = new Map<string, PilotNode>();
  for (const t of profile.tasks) {
    for (const a of t.attempts) {
      if (a.pilot !== pilot || a.slots === undefined) continue;
      for (const s of a.slots) {
        const n = seen.get(s.node) ?? { name: s.node, cores: 0, gpus: 0 };
        for (const c of s.cores) n.cores = Math.max(n.cores, c + 1);
        for (const g of s.gpus) n.gpus = Math.max(n.gpus, g + 1);
        seen.set(s.node, n);
      }
    }
  }
  return [...seen.values()];
}

export function pilotSlots(profile: Profile, pilot: PilotProfile): PilotSlots {
  const inferred = pilot.nodes === undefined;
  const nodes = pilot.nodes ?? inferNodes(profile, pilot.uid);
  const cores = nodes.reduce((n, x) => n + x.cores, 0);
  const gpus = nodes.reduce((n, x) => n + x.gpus, 0);
  const coreBase = new Map<string, [number, number]>();
  const gpuBase = new Map<string, [number, number]>();
  const nodeOf = new Int32Array(cores + gpus);
  const isGpu = new Uint8Array(cores + gpus);
  const indexOf = new Int32Array(cores + gpus);
  let c = 0;
  let g = cores;
  nodes.forEach((n, i) => {
    coreBase.set(n.name, [c, n.cores]);
    for (let k = 0; k < n.cores; k++, c++) {
      nodeOf[c] = i;
      indexOf[c] = k;
    }
    gpuBase.set(n.name, [g, n.gpus]);
    for (let k = 0; k < n.gpus; k++, g++) {
      nodeOf[g] = i;
      isGpu[g] = 1;
      indexOf[g] = k;
    }
  });
  const lookup =
    (bases: Map<string, [number, number]>) =>
    (node: string, i: number): number => {
      const b = bases.get(node);
      return b !== undefined && i >= 0 && i < b[1] ? b[0] + i : -1;
    };
  return {
    nodes,
    inferred,
    cores,
    gpus,
    coreSlot: lookup(coreBase),
    gpuSlot: lookup(gpuBase),
    nodeOf,
    isGpu,
    indexOf,
  };
}
