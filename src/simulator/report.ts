import type { PilotNode, Profile } from '../profile/types';
import { buildProfile } from '../profile/build';
import { FINAL_CODES, SIM_SESSION, type Simulation } from './engine';

/** Seconds, rounded to the microsecond so that reports print the same on every run. */
const sec = (ms: number): number => Math.round(ms * 1000) / 1e6;
const ratio = (x: number, y: number): number | null =>
  y > 0 ? Math.round((x / y) * 1e9) / 1e9 : null;

export interface PilotSummary {
  uid: string;
  resource: string;
  nodes: number;
  cores: number;
  gpus: number;
  /** When it ended: its runtime, or the end of the last task. */
  end_s: number;
  /** Core- and GPU-time its tasks ran over the time it held (start 0 to end_s). */
  utilization: number | null;
  gpu_utilization: number | null;
}

export interface SimulationReport {
  tasks: number;
  /** From submission (time 0) to the last task's end. */
  makespan_s: number;
  first_start_s: number | null;
  last_end_s: number | null;
  /** Tasks by final state; `unfinished`: never final (waiting on what never came). */
  counts: { DONE: number; FAILED: number; CANCELED: number; unfinished: number };
  /** Why tasks did not end DONE, per reason code: how many, and the first such task. */
  reasons: { code: string; count: number; first: { uid: string; message: string } }[];
  utilization: {
    cores: number;
    gpus: number;
    core: number | null;
    gpu: number | null;
    busy_core_s: number;
    busy_gpu_s: number;
  };
  pilots: PilotSummary[];
}

/** The figures of a finished simulation (a pure function of it: the same run, the same bytes). */
export function summarize(sim: Simulation): SimulationReport {
  const n = sim.tasks.uids.length;
  const counts = { DONE: 0, FAILED: 0, CANCELED: 0, unfinished: 0 };
  let first = Infinity;
  let last = -Infinity;
  for (let i = 0; i < n; i++) {
    const code = sim.final[i]!;
    if (code === 0) counts.unfinished++;
    else counts[FINAL_CODES[code] as 'DONE']++;
    const s = sim.start[i]!;
    if (!Number.isNaN(s)) {
      first = Math.min(first, s);
      last = Math.max(last, sim.end[i]!);
    }
  }
  const byCode = new Map<string, SimulationReport['reasons'][number]>();
  for (const [i, why] of [...sim.reasons].sort((a, b) => a[0] - b[0])) {
    const r = byCode.get(why.code);
    if (r !== undefined) r.count++;
    else {
      byCode.set(why.code, {
        code: why.code,
        count: 1,
        first: { uid: sim.tasks.uids[i]!, message: why.message },
      });
    }
  }
  let held = 0;
  let heldGpu = 0;
  let busy = 0;
  let busyGpu = 0;
  const pilots = sim.pilots.map((p, k): PilotSummary => {
    const m = sim.meters[k]!;
    const span = sim.pilotEnd[k]!;
    held += m.cores * span;
    heldGpu += m.gpus * span;
    busy += m.busyCoreMs;
    busyGpu += m.busyGpuMs;
    return {
      uid: p.uid,
      resource: p.resource,
      nodes: p.nodes.length,
      cores: m.cores,
      gpus: m.gpus,
      end_s: sec(span),
      utilization: ratio(m.busyCoreMs, m.cores * span),
      gpu_utilization: ratio(m.busyGpuMs, m.gpus * span),
    };
  });
  const ends = [...sim.pilotEnd].filter((t) => !Number.isNaN(t));
  return {
    tasks: n,
    makespan_s: sec(Number.isFinite(last) ? last : Math.max(0, ...ends)),
    first_start_s: Number.isFinite(first) ? sec(first) : null,
    last_end_s: Number.isFinite(last) ? sec(last) : null,
    counts,
    reasons: [...byCode.values()],
    utilization: {
      cores: pilots.reduce((s, p) => s + p.cores, 0),
      gpus: pilots.reduce((s, p) => s + p.gpus, 0),
      core: ratio(busy, held),
      gpu: ratio(busyGpu, heldGpu),
      busy_core_s: sec(busy),
      busy_gpu_s: sec(busyGpu),
    },
    pilots,
  };
}

/** One task's place in the simulated run (`--starts`, and `tasks` of `--json`). */
export interface TaskTimes {
  uid: string;
  name?: string;
  pilot: string | null;
  state: string;
  start_s: number | null;
  end_s: number | null;
}

/** Every task's times, in submission order. */
export function* taskTimes(sim: Simulation): Generator<TaskTimes> {
  const { uids, descriptions } = sim.tasks;
  for (let i = 0; i < uids.length; i++) {
    const k = sim.pilotOf[i]!;
    const s = sim.start[i]!;
    const e = sim.end[i]!;
    const name = descriptions[i]!.name;
    yield {
      uid: uids[i]!,
      ...(name !== undefined ? { name } : {}),
      pilot: k >= 0 ? sim.pilots[k]!.uid : null,
      state: FINAL_CODES[sim.final[i]!] || 'unfinished',
      start_s: Number.isNaN(s) ? null : sec(s),
      end_s: Number.isNaN(e) ? null : sec(e),
    };
  }
}

/**
 * The Profile of a simulation run with `record`, built by the same function as a real
 * session's (src/profile/build.ts) from the notifications the cores and the simulated
 * components made: the timeline chart and the utilization report read it as they read a run's.
 */
export function simProfile(sim: Simulation): Profile {
  if (sim.notes === undefined) throw new Error('simProfile: the simulation did not record');
  const tasks = new Map(sim.tasks.uids.map((u, i) => [u, sim.tasks.descriptions[i]!]));
  const pilots = new Map<string, { resource?: string; nodes?: PilotNode[] }>();
  for (const p of sim.pilots) {
    const nodes = p.nodes.map((x) => ({ name: x.name, cores: x.cores, gpus: x.gpus }));
    pilots.set(p.uid, { resource: p.resource, nodes });
  }
  const readAt = Math.max(sim.clock.now(), ...[...sim.pilotEnd].filter((t) => !Number.isNaN(t)));
  return buildProfile(SIM_SESSION, sim.notes, { tasks, pilots }, readAt);
}
