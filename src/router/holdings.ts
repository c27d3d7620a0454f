import type { Labels, RouterModelStatus, RouterStatus } from '../generated';
import type { StopWhy } from './effects';
import type { CompiledModel, CompiledRouterConfig } from './models';
import type { Resources, RunningModel } from './swapper';

// What the router holds (its replicas, the pilots, what it learned of each model) and what its
// decisions read of it: no decision here (core.ts, placement.ts decide).

/**
 * A replica's life: `waiting` (placed on a pilot, for the replicas it displaces to be gone),
 * `starting` (its service task submitted, not ready yet), `ready` (taking requests),
 * `draining` (no new requests; stopped once its in-flight ones are done or its grace is over),
 * `stopping` (its task canceled: it ends by onReplicaEnded).
 */
export type ReplicaState = 'waiting' | 'starting' | 'ready' | 'draining' | 'stopping';

export interface Replica {
  id: string;
  model: CompiledModel;
  pilot: string;
  state: ReplicaState;
  endpoint?: string;
  inFlight: Set<string>;
  lastUsedMs: number;
  startedMs?: number;
  drainSinceMs?: number;
  stopWhy?: StopWhy;
  /** The node it runs on, once ready (its task's first rank's). */
  node?: string;
  /** The replica this one takes over from before its pilot drains. */
  replaces?: string | undefined;
  replacedBy?: string | undefined;
}

/** A pilot as the router sees it: what it holds and when it stops taking work. */
export interface RouterPilot {
  uid: string;
  cores: number;
  gpus: number;
  /** When it drains (walltime-aware pilots): replicas on it are replaced on a pilot with time left. */
  drainAtMs?: number;
  /** Its nodes with their labels, once its agent reported them (a model's placement rules). */
  nodes?: readonly RouterNode[];
}

/** One node of a pilot: its size and labels. */
export interface RouterNode {
  name: string;
  cores: number;
  gpus: number;
  labels: Labels;
}

/**
 * What the router holds now, for status, metrics and GET /v1/router (schemas/control-reply:
 * RouterStatus, less the url its shell knows).
 */
export type RouterSnapshot = Omit<RouterStatus, 'url'> & {
  models: (RouterModelStatus & { served: number })[];
};

export interface ModelState {
  lastUsedMs: number;
  lastLoadMs?: number;
  loads: number;
  loadMsTotal: number;
  maxLoadMs: number;
  swaps: number;
  lost: number;
  served: number;
  /** Starts in a row that ended before they were ready. */
  failedStarts: number;
  /** Nodes its replicas were ready on, the latest first (where its files are likely cached). */
  nodes: string[];
}

/** How many nodes a model remembers it ran on. */
const NODES_KEPT = 8;

/** The handoff lead when a model says none: twice its last load, at least this. */
const MIN_HANDOFF_LEAD_MS = 60_000;

export class Holdings {
  readonly replicas = new Map<string, Replica>();
  readonly pilots = new Map<string, RouterPilot>();
  private readonly modelState = new Map<string, ModelState>();

  constructor(config: CompiledRouterConfig, now: number) {
    for (const m of config.models.values()) {
      this.modelState.set(m.name, {
        lastUsedMs: now,
        loads: 0,
        loadMsTotal: 0,
        maxLoadMs: 0,
        swaps: 0,
        lost: 0,
        served: 0,
        failedStarts: 0,
        nodes: [],
      });
    }
  }

  /**
   * Replica `r` is ready at `endpoint`, on `node` if known (the model remembers it): returns
   * how long it took to load.
   */
  ready(r: Replica, endpoint: string, node: string | undefined, now: number): number {
    r.state = 'ready';
    r.endpoint = endpoint;
    r.lastUsedMs = now;
    const st = this.stateOf(r.model.name);
    st.failedStarts = 0;
    const load = now - (r.startedMs ?? now);
    st.lastLoadMs = load;
    st.loads++;
    st.loadMsTotal += load;
    st.maxLoadMs = Math.max(st.maxLoadMs, load);
    if (node !== undefined) {
      r.node = node;
      st.nodes = [node, ...st.nodes.filter((n) => n !== node)].slice(0, NODES_KEPT);
    }
    return load;
  }

  /** A ready replica of the model with room for one more request: the fewest in flight. */
  pick(model: string): Replica | undefined {
    let best: Replica | undefined;
    for (const r of this.replicas.values()) {
      if (r.model.name !== model || r.state !== 'ready') continue;
      if (r.inFlight.size >= r.model.concurrency) continue;
      if (best === undefined || r.inFlight.size < best.inFlight.size) best = r;
    }
    return best;
  }

  /** Replicas that serve or will: waiting, starting, ready; one being replaced counts once. */
  serving(model: string): Replica[] {
    return this.replicasOf(model).filter(
      (r) =>
        (r.state === 'waiting' || r.state === 'starting' || r.state === 'ready') &&
        r.replaces === undefined,
    );
  }

  /** Replicas the queue asks for: enough for what is in flight and waiting, within min..max. */
  wanted(m: CompiledModel, waiting: number): number {
    const busy = this.serving(m.name).reduce((n, r) => n + r.inFlight.size, 0);
    const need = Math.ceil((waiting + busy) / m.concurrency);
    return Math.min(m.maxReplicas, Math.max(need, m.minReplicas, waiting > 0 ? 1 : 0));
  }

  replicasOf(model: string): Replica[] {
    return [...this.replicas.values()].filter((r) => r.model.name === model);
  }

  runningModels(): RunningModel[] {
    const out = new Map<string, RunningModel>();
    for (const r of this.replicas.values()) {
      if (r.state === 'draining' || r.state === 'stopping') continue;
      const m = out.get(r.model.name);
      if (m === undefined) {
        out.set(r.model.name, {
          name: r.model.name,
          inFlight: r.inFlight.size,
          lastUsedMs: r.lastUsedMs,
        });
      } else {
        m.inFlight += r.inFlight.size;
        m.lastUsedMs = Math.max(m.lastUsedMs, r.lastUsedMs);
      }
    }
    return [...out.values()];
  }

  /** What is free on the pilot, counting the replicas `counts` says hold room. */
  free(p: RouterPilot, counts: (r: Replica) => boolean): Resources {
    const free = { cores: p.cores, gpus: p.gpus };
    for (const r of this.replicas.values()) {
      if (r.pilot !== p.uid || !counts(r)) continue;
      free.cores -= r.model.uses.cores;
      free.gpus -= r.model.uses.gpus;
    }
    return free;
  }

  hasTimeLeft(p: RouterPilot, m: CompiledModel, now: number): boolean {
    return p.drainAtMs === undefined || p.drainAtMs - now > this.lead(m);
  }

  lead(m: CompiledModel): number {
    const load = this.stateOf(m.name).lastLoadMs;
    return m.handoffLeadMs ?? Math.max(MIN_HANDOFF_LEAD_MS, 2 * (load ?? 0));
  }

  handoffAt(r: Replica): number | undefined {
    const p = this.pilots.get(r.pilot);
    if (p?.drainAtMs === undefined) return undefined;
    return p.drainAtMs - this.lead(r.model);
  }

  stateOf(model: string): ModelState {
    return this.modelState.get(model)!;
  }

  used(model: string, now: number): void {
    this.stateOf(model).lastUsedMs = now;
  }

  /** What the router holds now, per model. */
  snapshot(config: CompiledRouterConfig, queued: (model: string) => number): RouterSnapshot {
    return {
      models: [...config.models.values()].map((m) => {
        const reps = this.replicasOf(m.name);
        const st = this.stateOf(m.name);
        return {
          name: m.name,
          queued: queued(m.name),
          inFlight: reps.reduce((n, r) => n + r.inFlight.size, 0),
          ...(st.lastLoadMs !== undefined ? { lastLoadMs: st.lastLoadMs } : {}),
          loads: st.loads,
          ...(st.loads > 0
            ? { meanLoadMs: Math.round(st.loadMsTotal / st.loads), maxLoadMs: st.maxLoadMs }
            : {}),
          swaps: st.swaps,
          lost: st.lost,
          served: st.served,
          replicas: reps.map((r) => ({
            id: r.id,
            state: r.state,
            pilot: r.pilot,
            ...(r.node !== undefined ? { node: r.node } : {}),
            ...(r.endpoint !== undefined ? { endpoint: r.endpoint } : {}),
            inFlight: r.inFlight.size,
          })),
        };
      }),
    };
  }

  /** The next time a replica needs a look: a drain grace over, an idle TTL, a handoff. */
  nextReplicaDeadline(now: number): number {
    let next = Infinity;
    for (const r of this.replicas.values()) {
      if (r.state === 'draining') next = Math.min(next, r.drainSinceMs! + r.model.stopGraceMs);
      if (r.state !== 'ready') continue;
      // one past due was kept (replicas.min, requests waiting): the next event looks again
      const idleAt = r.lastUsedMs + r.model.idleTtlMs;
      if (r.model.idleTtlMs > 0 && r.inFlight.size === 0 && idleAt > now) {
        next = Math.min(next, idleAt);
      }
      const at = r.replacedBy === undefined ? this.handoffAt(r) : undefined;
      // a handoff that could not be placed is tried again a second later, not in a busy loop
      if (at !== undefined) next = Math.min(next, Math.max(at, now + 1_000));
    }
    return next;
  }
}
