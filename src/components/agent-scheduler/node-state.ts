import type { Labels } from '../../generated';
import { LANE_DEPTH } from '../shared/lane-calls';

/** GPU capacity is counted in thousandths, so shares add up exactly (0.25 + 0.75 = 1). */
export const GPU_UNIT = 1000;

/**
 * A function call lane (lanes.ts): its calls, and whether it takes more (it was full and is not
 * half empty yet).
 */
export interface Lane {
  calls: number;
  full: boolean;
}

/** What a pilot's agent holds on one node. */
export interface NodeResources {
  name: string;
  cores: number;
  gpus: number;
  memMb: number;
  /** Its labels (the pilot's and its own), for tasks' placement.selector; default none. */
  labels?: Labels;
}

/** Free and used capacity of one node, and what owns it (tags, a reservation). */
export class NodeState {
  /** Free core indices, used as a stack. */
  readonly freeCores: number[];
  /** Free capacity of each GPU in thousandths. */
  readonly gpuFree: Int32Array;
  wholeGpus: number;
  memFree: number;
  /** Slots (ranks) placed on the node. */
  slots = 0;
  /** Tag whose exclusive tasks own the node, and how many of their slots are on it. */
  exclusiveTag: string | undefined;
  exclusiveSlots = 0;
  /** The waiting task this node is held for (no other task may be placed here). */
  reservedFor: string | undefined;
  /**
   * Function call lanes: core -> calls placed on it (see Request.lane). A lane's core is taken
   * from `freeCores` by its first call and given back when its last one leaves.
   */
  readonly lanes = new Map<number, Lane>();
  /** Most calls one lane holds (LANE_DEPTH unless the scheduler was told otherwise). */
  laneDepth = LANE_DEPTH;

  constructor(
    readonly index: number,
    readonly spec: NodeResources,
  ) {
    this.freeCores = Array.from({ length: spec.cores }, (_, i) => spec.cores - 1 - i);
    this.gpuFree = new Int32Array(spec.gpus).fill(GPU_UNIT);
    this.wholeGpus = spec.gpus;
    this.memFree = spec.memMb;
  }

  /** A copy of its capacity and ownership (not its lanes), for a plan that must not touch it. */
  copy(): NodeState {
    const c = new NodeState(this.index, this.spec);
    c.freeCores.length = 0;
    c.freeCores.push(...this.freeCores);
    c.gpuFree.set(this.gpuFree);
    c.wholeGpus = this.wholeGpus;
    c.memFree = this.memFree;
    c.slots = this.slots;
    c.exclusiveTag = this.exclusiveTag;
    c.exclusiveSlots = this.exclusiveSlots;
    c.reservedFor = this.reservedFor;
    return c;
  }

  get name(): string {
    return this.spec.name;
  }

  /** Best free share on a GPU that is shared already (0 when none is). */
  get bestPartial(): number {
    let best = 0;
    for (const f of this.gpuFree) if (f < GPU_UNIT && f > best) best = f;
    return best;
  }

  /** Open nodes take any task; exclusive-owned and reserved ones only their own. */
  get open(): boolean {
    return this.exclusiveTag === undefined && this.reservedFor === undefined;
  }
}
