import type { TaskRecord } from '../../generated';

type RankSlot = NonNullable<TaskRecord['slots']>[number];

/** Where a task runs, for its notifications: per node, the cores and GPUs its ranks hold. */
export interface NodeSlots {
  node: string;
  cores: number[];
  gpus: number[];
}

/** The ranks' slots gathered per node (in the order nodes first appear), indices sorted. */
export function slotsByNode(slots: readonly RankSlot[]): NodeSlots[] {
  if (slots.length === 1) {
    const s = slots[0]!;
    return [{ node: s.node, cores: s.cores, gpus: s.gpus }];
  }
  const byNode = new Map<string, { cores: Set<number>; gpus: Set<number> }>();
  for (const s of slots) {
    let n = byNode.get(s.node);
    if (n === undefined) byNode.set(s.node, (n = { cores: new Set(), gpus: new Set() }));
    for (const c of s.cores) n.cores.add(c);
    for (const g of s.gpus) n.gpus.add(g);
  }
  const sorted = (x: Set<number>): number[] => [...x].sort((a, b) => a - b);
  return [...byNode].map(([node, n]) => ({ node, cores: sorted(n.cores), gpus: sorted(n.gpus) }));
}
