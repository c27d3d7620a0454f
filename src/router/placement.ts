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

/**
 * Where one more replica of `m` goes (for `replacing`, on another pilot with time left): the
 * pilot where it displaces the fewest replicas, then the one with the most time left, then
 * where it fits tightest. A model `protect` names is never stopped for it.
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
  let best: { pilot: RouterPilot; stops: string[]; free: number; left: number } | undefined;
  let anyHolds = false;
  for (const p of h.pilots.values()) {
    if (replacing !== undefined && p.uid === replacing.pilot) continue;
    if (p.cores < m.uses.cores || p.gpus + 1e-9 < m.uses.gpus) continue;
    anyHolds = true;
    if (!h.hasTimeLeft(p, m, now)) continue;
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
    const room = free.gpus * 1_000 + free.cores;
    const left = p.drainAtMs ?? Infinity;
    if (
      best === undefined ||
      stops.length < best.stops.length ||
      (stops.length === best.stops.length &&
        (left > best.left || (left === best.left && room < best.free)))
    ) {
      best = { pilot: p, stops, free: room, left };
    }
  }
  if (best !== undefined) return { pilot: best.pilot.uid, policy, room: best.stops };
  return !anyHolds && h.pilots.size > 0 ? 'never' : undefined;
}
