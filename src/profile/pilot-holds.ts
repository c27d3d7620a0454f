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

function sized(profile: Profile, uid: string): Holds {
  let attempts = 0;
  let pairs = 0;
  for (const task of profile.tasks) {
    for (const a of task.attempts) {
      if (a.pilot !== uid) continue;
      attempts++;
      for (const s of a.slots ?? []) pairs += s.cores.length + s.gpus.length;
    }
  }
  return {
    times: new Float64Array(5 * attempts),
    held: 0,
    slotOf: new Int32Array(pairs),
    attemptOf: new Int32Array(pairs),
    pairs: 0,
    waitFrom: new Float64Array(attempts),
    waitTo: new Float64Array(attempts),
    waitShape: new Int32Array(attempts),
    waits: 0,
    shapes: [],
  };
}

/** The holds and waits of the attempts on pilot `uid`; `lo`..`hi` is its active part. */
export function collectHolds(
  profile: Profile,
  uid: string,
  slots: PilotSlots,
  lo: number,
  drain: number,
  hi: number,
): Holds {
  const h = sized(profile, uid);
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
