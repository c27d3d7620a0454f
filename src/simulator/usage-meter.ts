import type { NodeResources } from '../components/agent-scheduler/node-state';

type Slots = readonly { node: string; cores: readonly number[]; gpus: readonly number[] }[];

/**
 * Busy core- and GPU-milliseconds of one pilot, counted per slot as the union of the times
 * tasks ran on it (a shared GPU is busy while any share of it runs), which is how
 * src/profile/utilization.ts accounts `running` for a real run. Kept in flat arrays so that
 * 10,000 nodes cost a few MiB and no Profile has to be built.
 */
export class UsageMeter {
  private readonly nodeIndex = new Map<string, number>();
  private readonly coreBase: Int32Array;
  private readonly gpuBase: Int32Array;
  private readonly coreHolders: Int32Array;
  private readonly coreSince: Float64Array;
  private readonly gpuHolders: Int32Array;
  private readonly gpuSince: Float64Array;
  readonly cores: number;
  readonly gpus: number;
  busyCoreMs = 0;
  busyGpuMs = 0;

  constructor(nodes: readonly NodeResources[]) {
    this.coreBase = new Int32Array(nodes.length);
    this.gpuBase = new Int32Array(nodes.length);
    let c = 0;
    let g = 0;
    nodes.forEach((n, i) => {
      this.nodeIndex.set(n.name, i);
      this.coreBase[i] = c;
      this.gpuBase[i] = g;
      c += n.cores;
      g += n.gpus;
    });
    this.cores = c;
    this.gpus = g;
    this.coreHolders = new Int32Array(c);
    this.coreSince = new Float64Array(c);
    this.gpuHolders = new Int32Array(g);
    this.gpuSince = new Float64Array(g);
  }

  /** A task began to run on `slots` at `t`. */
  started(slots: Slots, t: number): void {
    for (const s of slots) {
      const i = this.nodeIndex.get(s.node)!;
      for (const k of s.cores) take(this.coreHolders, this.coreSince, this.coreBase[i]! + k, t);
      for (const k of s.gpus) take(this.gpuHolders, this.gpuSince, this.gpuBase[i]! + k, t);
    }
  }

  /** A task that began on `slots` stopped running at `t`. */
  ended(slots: Slots, t: number): void {
    for (const s of slots) {
      const i = this.nodeIndex.get(s.node)!;
      for (const k of s.cores) {
        this.busyCoreMs += drop(this.coreHolders, this.coreSince, this.coreBase[i]! + k, t);
      }
      for (const k of s.gpus) {
        this.busyGpuMs += drop(this.gpuHolders, this.gpuSince, this.gpuBase[i]! + k, t);
      }
    }
  }
}

function take(holders: Int32Array, since: Float64Array, at: number, t: number): void {
  if (holders[at]!++ === 0) since[at] = t;
}

/** The busy time that ends when the last holder of slot `at` leaves (else 0). */
function drop(holders: Int32Array, since: Float64Array, at: number, t: number): number {
  return --holders[at]! === 0 ? t - since[at]! : 0;
}
