import type { RouterConfig, RouterGroup } from '../generated';

// Which models must stop so that another may start: pure functions of (wanted, running), as
// llama-swap's Swapper. The policy (group, matrix) says what may not run together; room on a
// pilot is a second question, answered by roomStops below for every policy alike.

/** A model with a replica running or loading, as the swapper sees it. */
export interface RunningModel {
  name: string;
  /** Requests its replicas are serving now. */
  inFlight: number;
  /** When it last took or finished a request (ms; its start when it never served one). */
  lastUsedMs: number;
}

export interface Swapper {
  /** The running models (by name) that must stop before `wanted` may start, by policy. */
  stopsFor(wanted: string, running: readonly RunningModel[]): string[];
  /** Whether the model may be stopped to make room for another one (persistent ones not). */
  evictable(name: string): boolean;
}

/** No rule but room: any models run together when they fit. */
export class LruSwapper implements Swapper {
  stopsFor(_wanted: string, _running: readonly RunningModel[]): string[] {
    return [];
  }

  evictable(_name: string): boolean {
    return true;
  }
}

/**
 * Groups: a `swap` group runs one member at a time; starting a member of an `exclusive` group
 * stops every model outside it but those of `persistent` groups, which are never evicted to
 * make room either. A model in no group obeys no group rule.
 */
export class GroupSwapper implements Swapper {
  private readonly groupOf = new Map<string, RouterGroup>();

  constructor(groups: readonly RouterGroup[]) {
    for (const g of groups) for (const m of g.members) this.groupOf.set(m, g);
  }

  stopsFor(wanted: string, running: readonly RunningModel[]): string[] {
    const g = this.groupOf.get(wanted);
    if (g === undefined) return [];
    return running
      .map((r) => r.name)
      .filter((name) => {
        if (name === wanted) return false;
        const other = this.groupOf.get(name);
        if (other === g) return g.swap !== false;
        return g.exclusive === true && other?.persistent !== true;
      });
  }

  evictable(name: string): boolean {
    return this.groupOf.get(name)?.persistent !== true;
  }
}

/**
 * A matrix of the combinations allowed to run together: starting a model keeps the set (one
 * with it) whose stopped models cost least, ties to the fewest stopped, then the set listed
 * first. Every model is in some set (checked when the config is compiled).
 */
export class MatrixSwapper implements Swapper {
  constructor(
    private readonly sets: readonly (readonly string[])[],
    private readonly costs: Readonly<Record<string, number>> = {},
  ) {}

  stopsFor(wanted: string, running: readonly RunningModel[]): string[] {
    let best: { stops: string[]; cost: number } | undefined;
    for (const set of this.sets) {
      if (!set.includes(wanted)) continue;
      const stops = running.map((r) => r.name).filter((n) => n !== wanted && !set.includes(n));
      const cost = stops.reduce((sum, n) => sum + (this.costs[n] ?? 1), 0);
      if (
        best === undefined ||
        cost < best.cost ||
        (cost === best.cost && stops.length < best.stops.length)
      ) {
        best = { stops, cost };
      }
    }
    // a model in no set may not run at all: compileRouterConfig refuses such a config
    return best?.stops ?? running.map((r) => r.name).filter((n) => n !== wanted);
  }

  evictable(_name: string): boolean {
    return true;
  }
}

/** The swapper a config's `swap` says (lru when it says none). */
export function swapperFor(swap: RouterConfig['swap']): Swapper {
  switch (swap?.policy) {
    case undefined:
    case 'lru':
      return new LruSwapper();
    case 'group':
      return new GroupSwapper(swap.groups);
    case 'matrix':
      return new MatrixSwapper(swap.sets, swap.costs);
  }
}

/** Cores and GPUs (GPUs may be fractions of one). */
export interface Resources {
  cores: number;
  gpus: number;
}

/** A replica that could be stopped to make room on its pilot. */
export interface RoomCandidate {
  id: string;
  model: string;
  uses: Resources;
  inFlight: number;
  lastUsedMs: number;
}

/**
 * The replicas to stop so that `need` fits beside `free` (least recently used first, idle
 * ones before busy ones, only those `evictable` allows), or undefined when even all of them
 * would not make room. Empty when it fits already.
 */
export function roomStops(
  need: Resources,
  free: Resources,
  candidates: readonly RoomCandidate[],
  evictable: (model: string) => boolean,
): string[] | undefined {
  const fits = (r: Resources): boolean =>
    r.cores + 1e-9 >= need.cores && r.gpus + 1e-9 >= need.gpus;
  if (fits(free)) return [];
  const order = candidates
    .filter((c) => evictable(c.model))
    .sort(
      (a, b) =>
        Number(a.inFlight > 0) - Number(b.inFlight > 0) ||
        a.lastUsedMs - b.lastUsedMs ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
  const room = { ...free };
  const stops: string[] = [];
  for (const c of order) {
    // one that frees nothing this needs is not stopped for it
    if (
      (room.cores < need.cores && c.uses.cores > 0) ||
      (room.gpus + 1e-9 < need.gpus && c.uses.gpus > 0)
    ) {
      stops.push(c.id);
      room.cores += c.uses.cores;
      room.gpus += c.uses.gpus;
      if (fits(room)) return stops;
    }
  }
  return undefined;
}
