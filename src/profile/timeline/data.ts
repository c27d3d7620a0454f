import { waitsForJob } from '../intervals';
import { attemptEnd, attemptTimes, pilotWindow } from '../phases';
import { pilotSlots, type PilotSlots } from '../pilot-slots';
import type { Profile } from '../types';
import { utilization, type UtilizationReport } from '../utilization';
import { stateCounts, type StateCounts } from './series';

/** One lane of the chart: a core or a GPU of a node of a pilot. */
export interface Lane {
  pilot: number;
  node: string;
  gpu: boolean;
  index: number;
}

/** A pilot's lifetime, in ms since the chart's origin: submitted, job start, active, drain, end. */
export interface PilotBar {
  uid: string;
  /** Its first lane and how many it has. */
  lane: number;
  lanes: number;
  times: [number, number, number, number, number];
  final: string;
}

/**
 * What the page draws, compact: the attempts that held slots as typed arrays (base64 in the
 * page), their strings in arrays indexed by task, times in ms since `origin`.
 */
export interface TimelineData {
  session: string;
  origin: number;
  span: number;
  lanes: Lane[];
  pilots: PilotBar[];
  /** Held attempts: 5 instants each (HoldTimes), their lanes (CSR), their task and attempt number. */
  held: number;
  times: Float64Array;
  laneStart: Uint32Array;
  laneList: Uint32Array;
  taskOf: Uint32Array;
  attemptNo: Uint16Array;
  /** Index into `states` of each held attempt's state, and its reason where it has one. */
  stateOf: Uint8Array;
  states: string[];
  reasons: Record<number, string>;
  uids: string[];
  names: string[];
  counts: StateCounts;
  report: UtilizationReport;
}

/** The lanes of every pilot, node by node (its cores, then its GPUs); slot -> lane per pilot. */
function layLanes(profile: Profile): {
  lanes: Lane[];
  laneOf: Map<string, Int32Array>;
  slotsOf: Map<string, PilotSlots>;
  bars: PilotBar[];
} {
  const lanes: Lane[] = [];
  const laneOf = new Map<string, Int32Array>();
  const slotsOf = new Map<string, PilotSlots>();
  const bars: PilotBar[] = [];
  profile.pilots.forEach((p, pi) => {
    const slots = pilotSlots(profile, p);
    const map = new Int32Array(slots.cores + slots.gpus).fill(-1);
    const first = lanes.length;
    slots.nodes.forEach((node, ni) => {
      for (const gpu of [false, true]) {
        for (let s = 0; s < map.length; s++) {
          if (slots.nodeOf[s] !== ni || (slots.isGpu[s] === 1) !== gpu) continue;
          map[s] = lanes.length;
          lanes.push({ pilot: pi, node: node.name, gpu, index: slots.indexOf[s]! });
        }
      }
    });
    laneOf.set(p.uid, map);
    slotsOf.set(p.uid, slots);
    const w = pilotWindow(p, profile.readAt);
    const submitted = p.states[0]?.ts ?? w?.start ?? profile.readAt;
    const t = w ?? {
      start: profile.readAt,
      active: profile.readAt,
      drain: profile.readAt,
      end: profile.readAt,
    };
    bars.push({
      uid: p.uid,
      lane: first,
      lanes: lanes.length - first,
      // a local pilot waits for no job: from its submission it starts up
      times: [
        submitted,
        waitsForJob(p) ? t.start : Math.min(submitted, t.start),
        t.active,
        t.drain,
        t.end,
      ],
      final: p.final ?? p.states[p.states.length - 1]?.state ?? 'NEW',
    });
  });
  return { lanes, laneOf, slotsOf, bars };
}

/** The chart's data for a profile. */
export function timelineData(profile: Profile): TimelineData {
  const { lanes, laneOf, slotsOf, bars } = layLanes(profile);
  let origin = Math.min(...bars.map((b) => b.times[0]), profile.readAt);
  for (const t of profile.tasks) origin = Math.min(origin, t.attempts[0]?.states[0]?.ts ?? origin);
  const times: number[] = [];
  const laneStart: number[] = [0];
  const laneList: number[] = [];
  const taskOf: number[] = [];
  const attemptNo: number[] = [];
  const stateOf: number[] = [];
  const states: string[] = [];
  const stateIndex = new Map<string, number>();
  const reasons: Record<number, string> = {};
  let end = Math.max(...bars.map((b) => b.times[4]), origin);
  profile.tasks.forEach((task, ti) => {
    task.attempts.forEach((a, i) => {
      const map = a.pilot !== undefined ? laneOf.get(a.pilot) : undefined;
      const slots = a.pilot !== undefined ? slotsOf.get(a.pilot) : undefined;
      const hold = attemptTimes(a, attemptEnd(task, i, profile.readAt)).hold;
      if (map === undefined || slots === undefined || hold === undefined) return;
      const mine: number[] = [];
      for (const s of a.slots ?? []) {
        for (const c of s.cores) mine.push(map[slots.coreSlot(s.node, c)] ?? -1);
        for (const g of s.gpus) mine.push(map[slots.gpuSlot(s.node, g)] ?? -1);
      }
      const valid = mine.filter((l) => l >= 0);
      if (valid.length === 0) return;
      const idx = taskOf.length;
      for (const x of hold) times.push(x - origin);
      end = Math.max(end, hold[4]);
      laneList.push(...valid);
      laneStart.push(laneList.length);
      taskOf.push(ti);
      attemptNo.push(a.attempt);
      const state = a.final ?? a.states[a.states.length - 1]?.state ?? 'NEW';
      let si = stateIndex.get(state);
      if (si === undefined) stateIndex.set(state, (si = states.push(state) - 1));
      stateOf.push(si);
      if (a.reason !== undefined) reasons[idx] = `${a.reason.code}: ${a.reason.message}`;
    });
  });
  return {
    session: profile.session,
    origin,
    span: Math.max(end - origin, 1),
    lanes,
    pilots: bars.map((b) => ({ ...b, times: b.times.map((t) => t - origin) as PilotBar['times'] })),
    held: taskOf.length,
    times: Float64Array.from(times),
    laneStart: Uint32Array.from(laneStart),
    laneList: Uint32Array.from(laneList),
    taskOf: Uint32Array.from(taskOf),
    attemptNo: Uint16Array.from(attemptNo),
    stateOf: Uint8Array.from(stateOf),
    states,
    reasons,
    uids: profile.tasks.map((t) => t.uid),
    names: profile.tasks.map((t) => t.name ?? ''),
    counts: stateCounts(profile, origin),
    report: utilization(profile),
  };
}
