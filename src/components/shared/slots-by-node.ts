import type { TaskRecord } from '../../generated';

type RankSlot = NonNullable<TaskRecord['slots']>[number];

/** Where a task runs, for its notifications: per node, the cores and GPUs its ranks hold. */
export interface NodeSlots {
  node: string;
  cores: number[];
  gpus: number[];
}

/**
 * The ranks' slots gathered per node (in the order nodes first appear), indices sorted. GPUs a
 * rank sees without reserving them (placement.gpusVisible) are not what it holds: left out.
 */
export function slotsByNode(slots: readonly RankSlot[]): NodeSlots[] {
  if (slots.length === 1) {
    const s = slots[0]!;
    return [{ node: s.node, cores: s.cores, gpus: held(s) }];
  }
  const byNode = new Map<string, { cores: Set<number>; gpus: Set<number> }>();
  for (const s of slots) {
    let n = byNode.get(s.node);
    if (n === undefined) byNode.set(s.node, (n = { cores: new Set(), gpus: new Set() }));
    for (const c of s.cores) n.cores.add(c);
    for (const g of held(s)) n.gpus.add(g);
  }
  const sorted = (x: Set<number>): number[] => [...x].sort((a, b) => a - b);
  return [...byNode].map(([node, n]) => ({ node, cores: sorted(n.cores), gpus: sorted(n.gpus) }));
}

function held(s: RankSlot): number[] {
  return s.gpusUnreserved === true ? [] : s.gpus;
}
