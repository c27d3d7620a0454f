import { nodeAllowed, restricts } from '../components/shared/node-labels';
import type { Holdings, Replica, RouterPilot } from './holdings';
import type { CompiledModel } from './models';
import { roomStops, type Swapper } from './swapper';

/** Where one more replica goes, and what must stop for it. */
export type Placement =
  | {
      pilot: string;
      /** Models the swap policy stops (all their replicas, on every pilot). */
      policy: string[];
      /** Replicas stopped to make room on that pilot. */
      room: string[];
    }
  /** No pilot could ever hold a replica of it (too large for every one). */
  | 'never'
  /** Not now: no pilot with room, or the policy would stop a model `protect` names. */
  | undefined;

interface Candidate {
  pilot: RouterPilot;
  stops: string[];
  /** It has a node the model was ready on before. */
  ranBefore: boolean;
  free: number;
  left: number;
}

/**
 * Where one more replica of `m` goes (for `replacing`, on another pilot with time left): of the
 * pilots with a node its placement rules allow, the one where it displaces the fewest
 * replicas, then one with a node it was ready on before (the replica prefers those nodes:
 * its files are likely cached there), then the one with the most time left, then where it fits
 * tightest. A model `protect` names is never stopped for it.
 */
export function place(
  h: Holdings,
  swapper: Swapper,
  m: CompiledModel,
  now: number,
  protect: ReadonlySet<string>,
  replacing?: Replica,
): Placement {
  const policy = swapper.stopsFor(m.name, h.runningModels());
  if (policy.some((name) => protect.has(name))) return undefined;
  const leaving = (o: Replica): boolean =>
    policy.includes(o.model.name) || o.state === 'draining' || o.state === 'stopping';
  let best: Candidate | undefined;
  let anyHolds = false;
  const ranOn = h.stateOf(m.name).nodes;
  for (const p of h.pilots.values()) {
    if (replacing !== undefined && p.uid === replacing.pilot) continue;
    const holds = holdsEver(p, m);
    if (holds === false) continue;
    anyHolds = true;
    if (holds === undefined || !h.hasTimeLeft(p, m, now)) continue;
    const free = h.free(p, (o) => !leaving(o));
    const candidates = [...h.replicas.values()]
      .filter((o) => o.pilot === p.uid && !leaving(o) && o.model.name !== m.name)
      .filter((o) => !protect.has(o.model.name) && o.state !== 'waiting')
      .map((o) => ({
        id: o.id,
        model: o.model.name,
        uses: o.model.uses,
        inFlight: o.inFlight.size,
        lastUsedMs: o.lastUsedMs,
      }));
    const stops = roomStops(m.uses, free, candidates, (n) => swapper.evictable(n));
    if (stops === undefined) continue;
    const here: Candidate = {
      pilot: p,
      stops,
      ranBefore: p.nodes?.some((n) => ranOn.includes(n.name)) === true,
      free: free.gpus * 1_000 + free.cores,
      left: p.drainAtMs ?? Infinity,
    };
    if (best === undefined || better(here, best)) best = here;
  }
  if (best !== undefined) return { pilot: best.pilot.uid, policy, room: best.stops };
  return !anyHolds && h.pilots.size > 0 ? 'never' : undefined;
}

function better(a: Candidate, b: Candidate): boolean {
  if (a.stops.length !== b.stops.length) return a.stops.length < b.stops.length;
  if (a.ranBefore !== b.ranBefore) return a.ranBefore;
  if (a.left !== b.left) return a.left > b.left;
  return a.free < b.free;
}

/**
 * Whether pilot `p` could ever hold a replica of `m`: its size, and nodes its placement rules
 * allow that hold its ranks (their size, when empty); undefined while its nodes are unknown
 * and the model has rules.
 */
function holdsEver(p: RouterPilot, m: CompiledModel): boolean | undefined {
  if (p.cores < m.uses.cores || p.gpus + 1e-9 < m.uses.gpus) return false;
  const rules = m.service.placement;
  if (p.nodes === undefined) return restricts(rules) ? undefined : true;
  const cores = m.service.coresPerRank ?? 1;
  const gpus = m.service.gpusPerRank ?? 0;
  let ranks = 0;
  for (const n of p.nodes) {
    if (!nodeAllowed(rules, n.name, n.labels)) continue;
    const byCores = Math.floor(n.cores / cores);
    ranks += gpus > 0 ? Math.min(byCores, Math.floor((n.gpus + 1e-9) / gpus)) : byCores;
  }
  return ranks >= (m.service.ranks ?? 1);
}
