import { Arena } from './arena';
import { attemptEnd, HELD, needOf, scanAttempt, WAITED } from './phases';
import type { PilotSlots } from './pilot-slots';
import type { Profile } from './types';

/**
 * What the attempts bound to one pilot did, clipped to its active part: typed arrays sized up
 * front, so that a million attempts leave little garbage for a heap that holds their profile.
 */
export interface Holds {
  /** Five instants per held attempt (HoldTimes, clipped to [active, end]). */
  times: Float64Array;
  held: number;
  /** Pairs (slot, held attempt index): one per core or GPU an attempt held. */
  slotOf: Int32Array;
  attemptOf: Int32Array;
  pairs: number;
  /** Waiting intervals (clipped to [active, drain]) and their need's shape index. */
  waitFrom: Float64Array;
  waitTo: Float64Array;
  waitShape: Int32Array;
  waits: number;
  shapes: { cores: number; gpus: number }[];
}

/** How many attempts are bound to pilot `uid`, and how many cores and GPUs they held in all. */
export function countHolds(profile: Profile, uid: string): { attempts: number; pairs: number } {
  let attempts = 0;
  let pairs = 0;
  for (const task of profile.tasks) {
    for (const a of task.attempts) {
      if (a.pilot !== uid) continue;
      attempts++;
      for (const s of a.slots ?? []) pairs += s.cores.length + s.gpus.length;
    }
  }
  return { attempts, pairs };
}

/** The arena bytes collectHolds takes. */
export const holdsBytes = (attempts: number, pairs: number): number =>
  Arena.size(
    [8, 5 * attempts],
    [4, pairs],
    [4, pairs],
    [8, attempts],
    [8, attempts],
    [4, attempts],
  );

function sized(attempts: number, pairs: number, arena: Arena): Holds {
  return {
    times: arena.f64(5 * attempts),
    held: 0,
    slotOf: arena.i32(pairs),
    attemptOf: arena.i32(pairs),
    pairs: 0,
    waitFrom: arena.f64(attempts),
    waitTo: arena.f64(attempts),
    waitShape: arena.i32(attempts),
    waits: 0,
    shapes: [],
  };
}

/**
 * The holds and waits of the attempts on pilot `uid` (`count` of them: countHolds), in arrays
 * from `arena`; `lo`..`hi` is its active part.
 */
export function collectHolds(
  profile: Profile,
  uid: string,
  slots: PilotSlots,
  window: { lo: number; drain: number; hi: number },
  count: { attempts: number; pairs: number },
  arena: Arena,
): Holds {
  const { lo, drain, hi } = window;
  const h = sized(count.attempts, count.pairs, arena);
  const shapeIndex = new Map<string, number>();
  const out = new Float64Array(7);
  const clip = (t: number): number => Math.min(Math.max(t, lo), hi);
  const pair = (slot: number, idx: number): void => {
    if (slot < 0) return;
    h.slotOf[h.pairs] = slot;
    h.attemptOf[h.pairs++] = idx;
  };
  for (const task of profile.tasks) {
    for (let i = 0; i < task.attempts.length; i++) {
      const a = task.attempts[i]!;
      if (a.pilot !== uid) continue;
      const flags = scanAttempt(a, attemptEnd(task, i, profile.readAt), out);
      if (flags & HELD && clip(out[6]!) > clip(out[2]!)) {
        const idx = h.held++;
        for (let k = 0; k < 5; k++) h.times[idx * 5 + k] = clip(out[2 + k]!);
        for (const s of a.slots!) {
          for (const c of s.cores) pair(slots.coreSlot(s.node, c), idx);
          for (const g of s.gpus) pair(slots.gpuSlot(s.node, g), idx);
        }
      }
      if (!(flags & WAITED)) continue;
      const need = needOf(a);
      const from = Math.max(out[0]!, lo);
      const to = Math.min(out[1]!, drain);
      if (need === undefined || to <= from) continue;
      const key = need.cores * 65536 + need.gpus;
      let k = shapeIndex.get(String(key));
      if (k === undefined) shapeIndex.set(String(key), (k = h.shapes.push(need) - 1));
      h.waitFrom[h.waits] = from;
      h.waitTo[h.waits] = to;
      h.waitShape[h.waits++] = k;
    }
  }
  return h;
}
