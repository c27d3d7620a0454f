import { PHASES, pilotWindow } from './phases';
import { Arena } from './arena';
import { collectHolds, countHolds, holdsBytes, type Holds } from './pilot-holds';
import { pilotSlots, type PilotSlots } from './pilot-slots';
import { orderByTime, sortScratch, sortScratchBytes, type SortScratch } from './time-order';
import type { PilotProfile, Profile } from './types';
import { emptyAccount, pilotReport, type Account, type PilotUtilization } from './account';

/** Bucket indices of the accumulators (ms x slots), in the order of HoldTimes' phases first. */
const SCHEDULING = 0;
const DRAINING = 4;
const IDLE_PLAN = 5;
const IDLE_OVERHEAD = 6;

/** Event kinds of the sweep. */
const CORE = 0;
const GPU = 1;
const WAIT = 2;
const DRAIN = 3;

/** The sweep's events, in arrays sized up front. */
class Events {
  readonly t: Float64Array;
  readonly kind: Uint8Array;
  readonly arg: Int32Array;
  readonly delta: Int8Array;
  n = 0;
  constructor(
    capacity: number,
    arena: Arena,
    private readonly scratch: SortScratch,
  ) {
    this.t = arena.f64(capacity);
    this.kind = arena.u8(capacity);
    this.arg = arena.i32(capacity);
    this.delta = arena.i8(capacity);
  }

  static bytes(capacity: number): number {
    return Arena.size([8, capacity], [1, capacity], [4, capacity], [1, capacity]);
  }
  add(t: number, kind: number, arg: number, delta: number): void {
    const i = this.n++;
    this.t[i] = t;
    this.kind[i] = kind;
    this.arg[i] = arg;
    this.delta[i] = delta;
  }
  /** Indices in time order (ties in any order: no time passes between them). */
  order(): Uint32Array {
    return orderByTime(this.t.subarray(0, this.n), this.scratch);
  }
}

/**
 * The holds grouped by slot, each slot's in order of allocation: [start offsets, held indices].
 * The held attempts are sorted once by allocation, then dealt to their slots in that order.
 */
function holdsBySlot(
  h: Holds,
  slots: number,
  arena: Arena,
  scratch: SortScratch,
): [Int32Array, Uint32Array] {
  const T = h.times;
  const p0 = arena.f64(h.held);
  for (let a = 0; a < h.held; a++) p0[a] = T[a * 5]!;
  const byTime = orderByTime(p0, scratch);
  const rank = arena.u32(h.held);
  byTime.forEach((a, r) => (rank[a] = r));
  const start = arena.i32(slots + 1);
  for (let i = 0; i < h.pairs; i++) start[h.slotOf[i]! + 1]!++;
  for (let s = 0; s < slots; s++) start[s + 1]! += start[s]!;
  // pairs are in attempt order: deal them by rank so that each slot's list comes out sorted
  const pairAt = arena.u32(h.pairs);
  const firstPair = arena.u32(h.held + 1);
  for (let i = 0; i < h.pairs; i++) firstPair[h.attemptOf[i]! + 1]!++;
  for (let a = 0; a < h.held; a++) firstPair[a + 1]! += firstPair[a]!;
  const fillPairs = Uint32Array.from(firstPair.subarray(0, h.held));
  for (let i = 0; i < h.pairs; i++) pairAt[fillPairs[h.attemptOf[i]!]!++] = i;
  const fill = Int32Array.from(start.subarray(0, slots));
  const held = arena.u32(h.pairs);
  for (let r = 0; r < h.held; r++) {
    const a = byTime[r]!;
    for (let j = firstPair[a]!; j < firstPair[a + 1]!; j++) {
      held[fill[h.slotOf[pairAt[j]!]!]!++] = a;
    }
  }
  return [start, held];
}

/** The arena bytes of holdsBySlot. */
const bySlotBytes = (held: number, pairs: number, slots: number): number =>
  Arena.size([8, held], [4, held], [4, slots + 1], [4, pairs], [4, held + 1], [4, pairs]);

/**
 * Walks each slot's holds in order of allocation and adds each phase's time to its bucket. A
 * part of a hold that overlaps an earlier hold on the same slot (a profile that says two tasks
 * held one core at once) counts once, for the earlier. Emits the slot's busy runs as events.
 */
function accountHolds(
  h: Holds,
  slots: PilotSlots,
  acc: [Float64Array, Float64Array],
  ev: Events,
  arena: Arena,
  scratch: SortScratch,
): void {
  const n = slots.cores + slots.gpus;
  const [start, bySlot] = holdsBySlot(h, n, arena, scratch);
  const T = h.times;
  for (let s = 0; s < n; s++) {
    if (start[s] === start[s + 1]) continue;
    const kind = slots.isGpu[s] === 1 ? GPU : CORE;
    const node = slots.nodeOf[s]!;
    const a = acc[kind];
    let until = T[bySlot[start[s]!]! * 5]!;
    ev.add(until, kind, node, -1);
    for (let j = start[s]!; j < start[s + 1]!; j++) {
      const b = bySlot[j]! * 5;
      if (T[b]! > until) {
        ev.add(until, kind, node, +1);
        ev.add(T[b]!, kind, node, -1);
        until = T[b]!;
      }
      for (let k = 0; k < 4; k++) {
        const from = Math.max(T[b + k]!, until);
        const to = T[b + k + 1]!;
        if (to > from) a[SCHEDULING + k]! += to - from;
      }
      until = Math.max(until, T[b + 4]!);
    }
    ev.add(until, kind, node, +1);
  }
}

/** The free-slot part of the sweep: idle (plan or overhead) before the drain, draining after. */
class FreeSweep {
  readonly freeC: Int32Array;
  readonly freeG: Int32Array;
  totalC: number;
  totalG: number;
  readonly waiting: Int32Array;
  drained = false;
  private dirty = true;
  private overC = 0;
  private overG = 0;

  constructor(
    slots: PilotSlots,
    private readonly shapes: { cores: number; gpus: number }[],
  ) {
    this.freeC = Int32Array.from(slots.nodes.map((x) => x.cores));
    this.freeG = Int32Array.from(slots.nodes.map((x) => x.gpus));
    this.totalC = slots.cores;
    this.totalG = slots.gpus;
    this.waiting = new Int32Array(shapes.length);
  }

  apply(kind: number, arg: number, delta: number): void {
    this.dirty = true;
    if (kind === CORE) {
      this.freeC[arg]! += delta;
      this.totalC += delta;
    } else if (kind === GPU) {
      this.freeG[arg]! += delta;
      this.totalG += delta;
    } else if (kind === WAIT) {
      this.waiting[arg]! += delta;
    } else {
      this.drained = true;
    }
  }

  /**
   * Free slots that a waiting task could have used: per node, at most the free cores (GPUs)
   * and at most what the waiting tasks that fit its free cores and GPUs together need.
   */
  private overhead(): void {
    this.overC = 0;
    this.overG = 0;
    for (let n = 0; n < this.freeC.length; n++) {
      const fc = this.freeC[n]!;
      const fg = this.freeG[n]!;
      if (fc <= 0 && fg <= 0) continue;
      let c = 0;
      let g = 0;
      this.shapes.forEach((s, k) => {
        const w = this.waiting[k]!;
        if (w > 0 && s.cores <= fc && s.gpus <= fg) {
          c += w * s.cores;
          g += w * s.gpus;
        }
      });
      this.overC += Math.min(fc, c);
      this.overG += Math.min(fg, g);
    }
    this.dirty = false;
  }

  account(dt: number, acc: [Float64Array, Float64Array]): void {
    if (dt <= 0) return;
    const [c, g] = acc;
    if (this.drained) {
      c[DRAINING]! += this.totalC * dt;
      g[DRAINING]! += this.totalG * dt;
      return;
    }
    if (this.dirty) this.overhead();
    c[IDLE_OVERHEAD]! += this.overC * dt;
    c[IDLE_PLAN]! += (this.totalC - this.overC) * dt;
    g[IDLE_OVERHEAD]! += this.overG * dt;
    g[IDLE_PLAN]! += (this.totalG - this.overG) * dt;
  }
}

function toAccount(a: Float64Array, total: number, startUp: number): Account {
  const x = emptyAccount();
  x.total = total / 1000;
  x.startUp = startUp / 1000;
  PHASES.forEach((b, k) => (x[b] = a[SCHEDULING + k]! / 1000));
  x.draining = a[DRAINING]! / 1000;
  x.idlePlan = a[IDLE_PLAN]! / 1000;
  x.idleOverhead = a[IDLE_OVERHEAD]! / 1000;
  return x;
}

/** One pilot's accounts: the phases of its tasks' holds, then one sweep over its free slots. */
export function accountPilot(profile: Profile, pilot: PilotProfile): PilotUtilization {
  const slots = pilotSlots(profile, pilot);
  const w = pilotWindow(pilot, profile.readAt);
  const acc: [Float64Array, Float64Array] = [new Float64Array(8), new Float64Array(8)];
  const base = {
    pilot: pilot.uid,
    nodes: slots.nodes.length,
    nodesInferred: slots.inferred,
    cores: slots.cores,
    gpus: slots.gpus,
  };
  if (w === undefined) {
    const none = toAccount(acc[0], 0, 0);
    return pilotReport({
      ...base,
      start: profile.readAt,
      end: profile.readAt,
      coreSeconds: none,
      gpuSeconds: toAccount(acc[1], 0, 0),
    });
  }
  const count = countHolds(profile, pilot.uid);
  const { attempts, pairs } = count;
  const nSlots = slots.cores + slots.gpus;
  const events = 2 * pairs + 2 * attempts + 1;
  const arena = new Arena(
    holdsBytes(attempts, pairs) +
      bySlotBytes(attempts, pairs, nSlots) +
      Events.bytes(events) +
      sortScratchBytes(events),
  );
  const scratch = sortScratch(events, arena);
  const window = { lo: w.active, drain: w.drain, hi: w.end };
  const holds = collectHolds(profile, pilot.uid, slots, window, count, arena);
  const ev = new Events(events, arena, scratch);
  accountHolds(holds, slots, acc, ev, arena, scratch);
  for (let i = 0; i < holds.waits; i++) {
    ev.add(holds.waitFrom[i]!, WAIT, holds.waitShape[i]!, +1);
    ev.add(holds.waitTo[i]!, WAIT, holds.waitShape[i]!, -1);
  }
  ev.add(w.drain, DRAIN, 0, 0);
  const sweep = new FreeSweep(slots, holds.shapes);
  let now = w.active;
  for (const i of ev.order()) {
    const t = ev.t[i]!;
    sweep.account(t - now, acc);
    now = Math.max(now, t);
    sweep.apply(ev.kind[i]!, ev.arg[i]!, ev.delta[i]!);
  }
  sweep.account(w.end - now, acc);
  const span = w.end - w.start;
  const up = w.active - w.start;
  return pilotReport({
    ...base,
    start: w.start,
    end: w.end,
    coreSeconds: toAccount(acc[0], slots.cores * span, slots.cores * up),
    gpuSeconds: toAccount(acc[1], slots.gpus * span, slots.gpus * up),
  });
}
