import type { TaskRecord } from '../../generated';
import { enterLane, leaveLane } from './lanes';
import { GPU_UNIT, type NodeState } from './node-state';
import type { Request } from './request';

export type Slot = NonNullable<TaskRecord['slots']>[number];

/** One rank's hold on a node, kept to give back exactly what was taken. */
export interface Hold {
  node: NodeState;
  cores: number[];
  gpus: number[];
  /** Thousandths taken from each of `gpus`. */
  take: number;
  memMb: number;
  /** A call in a lane (its core is the lane's, given back with the lane's last call). */
  lane?: true;
  /** GPUs seen, not reserved (placement.gpusVisible): every GPU of the node. */
  seen?: number[];
}

/** Takes one rank's resources on `n` (the caller checked that they are free). */
export function takeRank(n: NodeState, r: Request): Hold {
  if (r.lane) {
    n.slots++;
    return { node: n, cores: [enterLane(n)], gpus: [], take: GPU_UNIT, memMb: 0, lane: true };
  }
  const cores = n.freeCores.splice(n.freeCores.length - r.cores, r.cores).reverse();
  let gpus: number[] = [];
  let take = GPU_UNIT;
  if (r.gpuIndices !== undefined) {
    gpus = [...r.gpuIndices];
  } else if (r.gpus > 0) {
    for (let i = 0; i < n.gpuFree.length && gpus.length < r.gpus; i++) {
      if (n.gpuFree[i] === GPU_UNIT) gpus.push(i);
    }
  } else if (r.share > 0) {
    take = r.share;
    gpus = [bestShareGpu(n, r.share)];
  }
  for (const g of gpus) {
    if (n.gpuFree[g] === GPU_UNIT) n.wholeGpus--;
    n.gpuFree[g] = n.gpuFree[g]! - take;
  }
  n.memFree -= r.memMb;
  n.slots++;
  const h: Hold = { node: n, cores, gpus, take, memMb: r.memMb };
  if (r.gpusVisible && n.gpuFree.length > 0) h.seen = Array.from(n.gpuFree, (_, i) => i);
  return h;
}

/**
 * Takes exactly what `slot` names on `n` (a task an agent before this one placed: its cores,
 * GPUs and memory as it ran); a call in a lane takes a lane, whichever.
 */
export function takeExact(n: NodeState, r: Request, slot: Slot): Hold {
  if (r.lane) return takeRank(n, r);
  const cores = slot.cores.filter((c) => {
    const i = n.freeCores.indexOf(c);
    if (i >= 0) n.freeCores.splice(i, 1);
    return i >= 0;
  });
  const take = slot.gpusUnreserved === true ? 0 : Math.round((slot.gpuShare ?? 1) * GPU_UNIT);
  const gpus = take === 0 ? [] : slot.gpus.filter((g) => (n.gpuFree[g] ?? -1) >= take);
  for (const g of gpus) {
    if (n.gpuFree[g] === GPU_UNIT) n.wholeGpus--;
    n.gpuFree[g] = n.gpuFree[g]! - take;
  }
  const memMb = slot.memMb ?? 0;
  n.memFree -= memMb;
  n.slots++;
  const h: Hold = { node: n, cores, gpus, take: take === 0 ? GPU_UNIT : take, memMb };
  if (slot.gpusUnreserved === true) h.seen = [...slot.gpus];
  return h;
}

/** Gives a rank's resources back. */
export function giveBack(h: Hold): void {
  const n = h.node;
  if (h.lane === true) {
    leaveLane(n, h.cores[0]!);
    n.slots--;
    return;
  }
  n.freeCores.push(...h.cores);
  for (const g of h.gpus) {
    n.gpuFree[g] = n.gpuFree[g]! + h.take;
    if (n.gpuFree[g] === GPU_UNIT) n.wholeGpus++;
  }
  n.memFree += h.memMb;
  n.slots--;
}

export function slotOf(h: Hold): Slot {
  if (h.seen !== undefined) {
    return { node: h.node.name, cores: h.cores, gpus: h.seen, gpusUnreserved: true, ...mem(h) };
  }
  const s: Slot = { node: h.node.name, cores: h.cores, gpus: h.gpus };
  if (h.gpus.length > 0 && h.take < GPU_UNIT) s.gpuShare = h.take / GPU_UNIT;
  if (h.memMb > 0) s.memMb = h.memMb;
  return s;
}

function mem(h: Hold): { memMb?: number } {
  return h.memMb > 0 ? { memMb: h.memMb } : {};
}

/** The shared GPU with the least free share that still holds `share`, else a whole one. */
function bestShareGpu(n: NodeState, share: number): number {
  let best = -1;
  for (let i = 0; i < n.gpuFree.length; i++) {
    const f = n.gpuFree[i]!;
    if (f >= share && f < GPU_UNIT && (best < 0 || f < n.gpuFree[best]!)) best = i;
  }
  if (best >= 0) return best;
  return n.gpuFree.indexOf(GPU_UNIT);
}
