import type { NodeState } from './node-state';

/**
 * Open nodes bucketed by (free cores, free whole GPUs): a search visits at most
 * (cores + 1) x (gpus + 1) buckets, best fit first, whatever the number of nodes.
 * Nodes with a shared GPU are also bucketed by (free cores, eighths of their best free share).
 */
export class NodeIndex {
  private readonly whole: Set<NodeState>[];
  private readonly partial: Set<NodeState>[];
  private readonly key = new Map<NodeState, { w: number; p: number }>();
  /** Nodes per free-core count, so a search skips empty rows of buckets at once. */
  private readonly rows: Int32Array;
  private readonly partialRows: Int32Array;

  constructor(
    private readonly maxCores: number,
    private readonly maxGpus: number,
  ) {
    this.whole = Array.from({ length: (maxCores + 1) * (maxGpus + 1) }, () => new Set());
    this.partial = Array.from({ length: (maxCores + 1) * 8 }, () => new Set());
    this.rows = new Int32Array(maxCores + 1);
    this.partialRows = new Int32Array(maxCores + 1);
  }

  /** Adds or re-files a node after its free capacity changed. */
  update(n: NodeState): void {
    this.remove(n);
    const c = n.freeCores.length;
    const w = c * (this.maxGpus + 1) + n.wholeGpus;
    this.whole[w]!.add(n);
    this.rows[c]!++;
    const best = n.bestPartial;
    const p = best > 0 ? c * 8 + Math.min(7, Math.floor((best * 8) / 1000)) : -1;
    if (p >= 0) {
      this.partial[p]!.add(n);
      this.partialRows[c]!++;
    }
    this.key.set(n, { w, p });
  }

  remove(n: NodeState): void {
    const k = this.key.get(n);
    if (k === undefined) return;
    this.whole[k.w]!.delete(n);
    this.rows[Math.floor(k.w / (this.maxGpus + 1))]!--;
    if (k.p >= 0) {
      this.partial[k.p]!.delete(n);
      this.partialRows[k.p >> 3]!--;
    }
    this.key.delete(n);
  }

  has(n: NodeState): boolean {
    return this.key.has(n);
  }

  /** First node (fewest free cores, then fewest free GPUs) with the capacity that `ok` accepts. */
  findWhole(cores: number, gpus: number, ok: (n: NodeState) => boolean): NodeState | undefined {
    for (let c = cores; c <= this.maxCores; c++) {
      if (this.rows[c] === 0) continue;
      for (let g = gpus; g <= this.maxGpus; g++) {
        const set = this.whole[c * (this.maxGpus + 1) + g]!;
        if (set.size === 0) continue;
        for (const n of set) if (ok(n)) return n;
      }
    }
    return undefined;
  }

  /** First node with a shared GPU whose best free share may hold `share` thousandths. */
  findPartial(cores: number, share: number, ok: (n: NodeState) => boolean): NodeState | undefined {
    const from = Math.floor((share * 8) / 1000);
    for (let c = cores; c <= this.maxCores; c++) {
      if (this.partialRows[c] === 0) continue;
      for (let p = from; p < 8; p++) {
        const set = this.partial[c * 8 + p]!;
        if (set.size === 0) continue;
        for (const n of set) if (ok(n)) return n;
      }
    }
    return undefined;
  }

  /** Indexed nodes, most free cores (then GPUs) first: candidates for a reservation. */
  *mostFree(): Generator<NodeState> {
    for (let c = this.maxCores; c >= 0; c--) {
      for (let g = this.maxGpus; g >= 0; g--) yield* this.whole[c * (this.maxGpus + 1) + g]!;
    }
  }
}
