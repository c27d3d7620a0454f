import type { Reason, TaskDescription, TaskRecord } from '../../generated';
import { COMPONENTS } from '../../states/task-model';
import { reason } from '../shared/reasons';
import { isLaneCall, LANE_DEPTH } from '../shared/lane-calls';
import {
  describeRules,
  formatLabels,
  nodeAllowed,
  restricts,
  type NodeLabels,
  type TaskPlacement,
} from '../shared/node-labels';

const ME = COMPONENTS.managerScheduler;

/**
 * A pilot as the ManagerScheduler sees it: its size, whether its agent is up, and what it was
 * given that has not come back. Late placement (as RADICAL-Pilot's backfilling scheduler does): a
 * task goes to a pilot only when that pilot is active and has room for it, so a pilot still
 * queued in a batch system never holds tasks another pilot could run now.
 */
export class PilotRoom {
  active = false;
  /**
   * Its size is what its agent reported (agent_ready), not the estimate made before the agent
   * was up (a batch launcher's guess when sinfo cannot say): only then may a task be failed
   * for never fitting it.
   */
  reported = false;
  /** Cores and GPUs of the tasks given to it and not yet back or ended. */
  heldCores = 0;
  heldGpus = 0;
  /** Plain function calls given to it and not yet back or ended (they queue in lanes). */
  heldCalls = 0;
  /**
   * When it drains (client clock, ms): it starts no task from then on, and a task that declares
   * walltimeS must be able to end by then. Undefined until its agent says (agent_ready).
   */
  drainsAt: number | undefined;

  /** Its nodes' names and labels: undefined until its agent reported them. */
  nodes: readonly NodeLabels[] | undefined;

  constructor(
    readonly uid: string,
    public cores: number,
    public gpus: number,
  ) {}

  /** Whether a node of it meets a task's placement rules: undefined while its nodes are unknown. */
  allows(p: TaskPlacement | undefined): boolean | undefined {
    if (!restricts(p)) return true;
    if (this.nodes === undefined) return undefined;
    for (const n of this.nodes) if (nodeAllowed(p, n.name, n.labels)) return true;
    return false;
  }

  /** Whether it has a node the task would rather run on (placement.prefer). */
  preferred(p: TaskPlacement | undefined): boolean {
    const names = p?.prefer;
    if (names === undefined || names.length === 0 || this.nodes === undefined) return false;
    for (const n of this.nodes) if (names.includes(n.name)) return true;
    return false;
  }

  /** Whether the task could run here at all (its whole size at once). */
  fitsEver(cores: number, gpus: number): boolean {
    return cores <= this.cores && gpus <= this.gpus;
  }

  /** Whether a task needing `walltimeS` (undefined: not declared) can still start here. */
  hasTime(walltimeS: number | undefined, now: number): boolean {
    const d = this.drainsAt;
    return d === undefined || (now < d && (walltimeS === undefined || now + walltimeS * 1000 <= d));
  }

  /** Seconds left before it drains (undefined: not known), for reasons. */
  secondsLeft(now: number): number | undefined {
    return this.drainsAt === undefined ? undefined : Math.max(0, (this.drainsAt - now) / 1000);
  }

  /**
   * Room: what it runs plus a backlog that keeps its agent fed across the round trip to the
   * client (its own size again, at least 64 cores and 8 GPUs), so short tasks do not leave it
   * idle and long ones do not pile up on it.
   */
  hasRoom(size: Size): boolean {
    if (size.call) return this.heldCalls < 2 * LANE_DEPTH * Math.max(1, this.cores);
    const { cores, gpus } = size;
    return (
      this.heldCores + cores <= this.cores + Math.max(this.cores, 64) &&
      (gpus === 0 || this.heldGpus + gpus <= this.gpus + Math.max(this.gpus, 8))
    );
  }

  /** How full it is (0: nothing held), to spread tasks over pilots: a call weighs a lane's share. */
  load(): number {
    return (this.heldCores + this.heldCalls / LANE_DEPTH) / Math.max(1, this.cores);
  }

  take(size: Size): void {
    if (size.call) this.heldCalls++;
    else {
      this.heldCores += size.cores;
      this.heldGpus += size.gpus;
    }
  }

  giveBack(size: Size): void {
    if (size.call) this.heldCalls = Math.max(0, this.heldCalls - 1);
    else {
      this.heldCores = Math.max(0, this.heldCores - size.cores);
      this.heldGpus = Math.max(0, this.heldGpus - size.gpus);
    }
  }
}

/**
 * What a task holds of a pilot's room: its cores and GPUs over all its ranks, or, for a plain
 * function call (`call`: isLaneCall), a place in a lane. A pilot holds calls enough to fill its
 * lanes twice over (LANE_DEPTH per core, and as many waiting), whatever it runs besides.
 */
export interface Size {
  cores: number;
  gpus: number;
  call: boolean;
}

/** What a task given to a pilot holds of its room, and which pilot's. */
export interface Holding extends Size {
  pilot: PilotRoom;
}

/** The cores and GPUs a task asks, over all its ranks. */
export function sizeOf(d: TaskDescription): Size {
  const ranks = d.ranks ?? 1;
  return {
    cores: ranks * (d.coresPerRank ?? 1),
    gpus: ranks * (d.gpusPerRank ?? 0),
    call: isLaneCall(d),
  };
}

/**
 * Whether any of `rooms` could ever hold a task of this size, as far as is known: a room whose
 * size is only estimated (not `reported`) might, so a task waits for its agent to say.
 */
export function fitsAny(
  rooms: readonly PilotRoom[],
  cores: number,
  gpus: number,
  placement: TaskPlacement | undefined,
): boolean {
  for (const p of rooms) {
    if (!p.reported || (p.fitsEver(cores, gpus) && p.allows(placement) !== false)) return true;
  }
  return false;
}

/** E_NEVER_FITS: no pilot can ever hold the task, with the sizes it asks and they have. */
export function neverFits(task: TaskRecord, pilots: readonly PilotRoom[]): Reason {
  const d = task.description;
  const ranks = d.ranks ?? 1;
  const sized = pilots.filter((p) =>
    p.fitsEver(ranks * (d.coresPerRank ?? 1), ranks * (d.gpusPerRank ?? 0)),
  );
  if (sized.length > 0 && d.placement !== undefined) return noNodeAllowed(d.placement, sized);
  const have = pilots.map((p) => `${p.uid}: ${p.cores} cores, ${p.gpus} GPUs`).join('; ');
  return reason(
    'E_NEVER_FITS',
    `task asks ${ranks} rank(s) x ${d.coresPerRank ?? 1} cores and ${d.gpusPerRank ?? 0} GPUs per rank; ` +
      `no pilot can ever hold it (${have})`,
    ME,
    { asked: { ranks, coresPerRank: d.coresPerRank ?? 1, gpusPerRank: d.gpusPerRank ?? 0 } },
  );
}

/** E_NEVER_FITS: pilots big enough have no node the task's placement rules allow. */
function noNodeAllowed(placement: TaskPlacement, pilots: readonly PilotRoom[]): Reason {
  const have = pilots
    .slice(0, 4)
    .map((p) => {
      const nodes = (p.nodes ?? []).slice(0, 8);
      return `${p.uid}: ${nodes.map((n) => `${n.name} (${formatLabels(n.labels)})`).join(', ')}`;
    })
    .join('; ');
  return reason(
    'E_NEVER_FITS',
    `task must run on ${describeRules(placement)}; no pilot big enough has such a node (${have})`,
    ME,
    { placement },
  );
}

/** What the scheduler knows of a pilot: enough to tell whether a task can ever fit it. */
export interface PilotCapacity {
  uid: string;
  cores: number;
  gpus: number;
  /** Milliseconds from now until it drains, as its agent said (agent_ready). */
  drainInMs?: number | undefined;
  /** Its nodes' names and labels, once its agent reported them (tasks' placement rules). */
  nodes?: readonly NodeLabels[] | undefined;
}

/**
 * The pilot a task goes to now, if any: of `pilots`, those active, not `blocked`, that could
 * ever hold it (its size, its placement rules) and have the time it needs are pushed to
 * `usable`; of those with room, one with a node it prefers, else the least loaded.
 */
export function bestRoom(
  pilots: readonly PilotRoom[],
  blocked: ReadonlySet<PilotRoom>,
  size: Size,
  d: TaskDescription,
  now: number,
  usable: PilotRoom[],
): PilotRoom | undefined {
  usable.length = 0;
  let best: PilotRoom | undefined;
  for (const p of pilots) {
    if (!p.active || blocked.has(p) || !p.fitsEver(size.cores, size.gpus)) continue;
    if (!p.hasTime(d.walltimeS, now) || p.allows(d.placement) === false) continue;
    usable.push(p);
    if (p.hasRoom(size) && (best === undefined || suitsBetter(p, best, d.placement))) best = p;
  }
  return best;
}

/** Whether `p` suits a task better than `q`: a node it prefers first, then the lighter load. */
function suitsBetter(p: PilotRoom, q: PilotRoom, placement: TaskPlacement | undefined): boolean {
  if (placement?.prefer !== undefined) {
    const a = p.preferred(placement);
    if (a !== q.preferred(placement)) return a;
  }
  return p.load() < q.load();
}
