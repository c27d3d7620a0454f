import type { Clock, Timer } from '../lib/clock';
import type { RouteError, RouterEffects, StopWhy } from './effects';
import type { CompiledModel, CompiledRouterConfig } from './models';
import { RequestQueue } from './queue';
import { roomStops, type Resources, type RunningModel } from './swapper';

// The model router's decisions (docs/router.md): which replica a request goes to, when a
// replica starts, where, and what stops to make room, when an idle one stops, when one is
// replaced before its pilot drains. Synchronous handlers on an injected clock; everything it
// does goes through RouterEffects, and comes back as an on*() event.

/**
 * A replica's life: `waiting` (placed on a pilot, for the replicas it displaces to be gone),
 * `starting` (its service task submitted, not ready yet), `ready` (taking requests),
 * `draining` (no new requests; stopped once its in-flight ones are done or its grace is over),
 * `stopping` (its task canceled: it ends by onReplicaEnded).
 */
export type ReplicaState = 'waiting' | 'starting' | 'ready' | 'draining' | 'stopping';

interface Replica {
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
}

/** What the router holds now, for status, metrics and GET /v1/models. */
export interface RouterSnapshot {
  models: {
    name: string;
    queued: number;
    inFlight: number;
    lastLoadMs?: number;
    replicas: {
      id: string;
      state: ReplicaState;
      pilot: string;
      endpoint?: string;
      inFlight: number;
    }[];
  }[];
}

interface ModelState {
  lastUsedMs: number;
  lastLoadMs?: number;
  /** Starts in a row that ended before they were ready. */
  failedStarts: number;
}

const STOP_TEXT: Record<StopWhy, string> = {
  idle: 'idle past its idleTtlS',
  swap: 'another model it may not run with was asked for',
  room: 'to make room for another model',
  handoff: 'its pilot drains: a replacement serves',
  unload: 'unloaded',
};

/** Replicas that failed to start in a row before the requests waiting for them are refused. */
const FAILED_STARTS = 2;
/** The handoff lead when a model says none: twice its last load, at least this. */
const MIN_HANDOFF_LEAD_MS = 60_000;

export class RouterCore {
  private readonly queue = new RequestQueue();
  /** Requests dispatched (in flight): their replica. */
  private readonly inFlight = new Map<string, string>();
  private readonly replicas = new Map<string, Replica>();
  private readonly pilots = new Map<string, RouterPilot>();
  private readonly modelState = new Map<string, ModelState>();
  private seq = 0;
  private replicaSeq = 0;
  private timer: Timer | undefined;
  private timerAt = Infinity;

  constructor(
    private readonly config: CompiledRouterConfig,
    private readonly effects: RouterEffects,
    private readonly clock: Clock,
    /**
     * Prefix of replica uids (a task uid each: `<prefix><model>.<n>`); unique to this router
     * in its session (a restarted one must not name a replica as an earlier one did).
     */
    private readonly uidPrefix = 'router.',
  ) {
    const now = clock.now();
    for (const m of config.models.values()) {
      this.modelState.set(m.name, { lastUsedMs: now, failedStarts: 0 });
    }
  }

  // ---- events ------------------------------------------------------------------------------

  /** A pilot that may run replicas (again, to say it drains). */
  onPilot(p: RouterPilot): void {
    this.pilots.set(p.uid, { ...p });
    this.pump();
  }

  /** A pilot ended: its replicas end too (each by onReplicaEnded); nothing new goes there. */
  onPilotGone(uid: string): void {
    this.pilots.delete(uid);
    for (const r of this.replicas.values()) {
      // placed there and not started: placed again by the next pump
      if (r.pilot === uid && r.state === 'waiting') this.replicas.delete(r.id);
    }
    this.pump();
  }

  /** A request for `model` (a name or an alias), served in order of priority then arrival. */
  onRequest(id: string, model: string, priority?: number): void {
    const m = this.config.lookup(model);
    if (m === undefined) {
      const known = [...this.config.models.keys()].slice(0, 20).join(', ');
      return this.effects.reject(id, {
        status: 404,
        code: 'E_UNKNOWN_MODEL',
        message: `no model '${model}' here (models: ${known})`,
      });
    }
    if (this.queue.waiting(m.name) >= m.queueLimit) {
      return this.effects.reject(id, {
        status: 503,
        code: 'E_QUEUE_FULL',
        message: `${m.queueLimit} requests wait for model '${m.name}' already (its queueLimit)`,
      });
    }
    const now = this.clock.now();
    this.queue.add({
      id,
      model: m.name,
      priority: priority ?? m.priority,
      seq: this.seq++,
      atMs: now,
    });
    this.pump();
  }

  /** A request ended (answered, failed or its client gone): waiting or in flight. */
  onRequestDone(id: string): void {
    const replica = this.inFlight.get(id);
    if (replica !== undefined) {
      this.inFlight.delete(id);
      const r = this.replicas.get(replica);
      if (r !== undefined) {
        r.inFlight.delete(id);
        r.lastUsedMs = this.clock.now();
        this.used(r.model.name);
      }
    } else if (!this.queue.remove(id)) return;
    this.pump();
  }

  /** A replica's service is ready at `endpoint`. */
  onReplicaReady(id: string, endpoint: string): void {
    const r = this.replicas.get(id);
    if (r === undefined || (r.state !== 'starting' && r.state !== 'waiting')) return;
    const now = this.clock.now();
    r.state = 'ready';
    r.endpoint = endpoint;
    r.lastUsedMs = now;
    const st = this.stateOf(r.model.name);
    st.failedStarts = 0;
    const loadMs = now - (r.startedMs ?? now);
    st.lastLoadMs = loadMs;
    this.effects.record({
      type: 'replica_ready',
      model: r.model.name,
      replica: id,
      pilot: r.pilot,
      loadMs,
    });
    const old = r.replaces !== undefined ? this.replicas.get(r.replaces) : undefined;
    if (old !== undefined) this.drain(old, 'handoff');
    r.replaces = undefined;
    this.pump();
  }

  /** A replica's task ended (stopped, failed, its pilot gone), with the reason it gives. */
  onReplicaEnded(id: string, reason: string): void {
    const r = this.replicas.get(id);
    if (r === undefined) return;
    this.replicas.delete(id);
    const expected = r.state === 'stopping';
    this.effects.record({
      type: 'replica_ended',
      model: r.model.name,
      replica: id,
      reason,
      expected,
    });
    for (const req of r.inFlight) {
      this.inFlight.delete(req);
      this.effects.reject(req, {
        status: 502,
        code: expected ? 'E_BACKEND_STOPPED' : 'E_BACKEND_LOST',
        message: expected
          ? `model '${r.model.name}': its replica ${id} was stopped (${STOP_TEXT[r.stopWhy ?? 'unload']}) and its stopGraceS (${r.model.stopGraceMs / 1000} s) ran out before this request was done: ${reason}`
          : `model '${r.model.name}': its replica ${id} ended while serving this request: ${reason}`,
      });
    }
    if (r.replacedBy !== undefined) {
      const next = this.replicas.get(r.replacedBy);
      if (next !== undefined) next.replaces = undefined;
    }
    if (r.replaces !== undefined) {
      const old = this.replicas.get(r.replaces);
      if (old !== undefined) old.replacedBy = undefined;
    }
    if (r.state === 'starting' && !expected) this.failedStart(r.model, reason);
    this.pump();
  }

  /** Stops every replica of the model (its in-flight requests get its stopGraceS): their uids. */
  unload(model: string): string[] {
    const m = this.config.lookup(model);
    if (m === undefined) return [];
    const ids: string[] = [];
    for (const r of this.replicasOf(m.name)) {
      if (r.state === 'waiting') this.replicas.delete(r.id);
      else {
        ids.push(r.id);
        this.drain(r, 'unload');
      }
    }
    this.pump();
    return ids;
  }

  snapshot(): RouterSnapshot {
    return {
      models: [...this.config.models.values()].map((m) => {
        const reps = this.replicasOf(m.name);
        const st = this.stateOf(m.name);
        return {
          name: m.name,
          queued: this.queue.waiting(m.name),
          inFlight: reps.reduce((n, r) => n + r.inFlight.size, 0),
          ...(st.lastLoadMs !== undefined ? { lastLoadMs: st.lastLoadMs } : {}),
          replicas: reps.map((r) => ({
            id: r.id,
            state: r.state,
            pilot: r.pilot,
            ...(r.endpoint !== undefined ? { endpoint: r.endpoint } : {}),
            inFlight: r.inFlight.size,
          })),
        };
      }),
    };
  }

  /** Stops the timer (the router is closing). */
  close(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  // ---- the decisions -----------------------------------------------------------------------

  /** Everything that follows from the state now; then a timer for the next deadline. */
  private pump(): void {
    const now = this.clock.now();
    this.expireQueued(now);
    this.stopIdle(now);
    this.stopDrained(now);
    this.handOff(now);
    this.serveQueue(now);
    this.keepMinimum();
    this.startWaiting(now);
    this.arm(now);
  }

  private expireQueued(now: number): void {
    for (const q of this.queue.ordered()) {
      const m = this.config.models.get(q.model)!;
      if (now - q.atMs < m.queueTimeoutMs) continue;
      this.queue.remove(q.id);
      this.effects.reject(q.id, {
        status: 504,
        code: 'E_QUEUE_TIMEOUT',
        message: `no replica of model '${m.name}' took this request in ${m.queueTimeoutMs / 1000} s (its queueTimeoutS)`,
      });
    }
  }

  /** A replica idle for its model's idleTtlS stops, down to replicas.min, unless requests wait. */
  private stopIdle(now: number): void {
    for (const m of this.config.models.values()) {
      if (m.idleTtlMs === 0 || this.queue.waiting(m.name) > 0) continue;
      let serving = this.serving(m.name).length;
      for (const r of this.serving(m.name)) {
        if (serving <= m.minReplicas) break;
        if (r.state === 'ready' && r.inFlight.size === 0 && now - r.lastUsedMs >= m.idleTtlMs) {
          this.drain(r, 'idle');
          serving--;
        }
      }
    }
  }

  private stopDrained(now: number): void {
    for (const r of this.replicas.values()) {
      if (r.state !== 'draining') continue;
      if (r.inFlight.size === 0 || now - r.drainSinceMs! >= r.model.stopGraceMs) {
        r.state = 'stopping';
        this.effects.stopReplica(r.id);
      }
    }
  }

  /** A ready replica whose pilot drains within its model's lead gets a replacement elsewhere. */
  private handOff(now: number): void {
    for (const r of [...this.replicas.values()]) {
      if (r.state !== 'ready' || r.replacedBy !== undefined) continue;
      const at = this.handoffAt(r);
      if (at === undefined || now < at) continue;
      const waitedFor = new Set(this.queue.ordered().map((q) => q.model));
      waitedFor.delete(r.model.name);
      this.planStart(r.model, now, waitedFor, r);
    }
  }

  /**
   * The queue in order: each request to a ready replica of its model with room (the fewest in
   * flight), else its model gets the replicas the queue asks for. A start may stop other
   * models (policy, room) but never one that a request earlier in the queue waits for.
   */
  private serveQueue(now: number): void {
    const neededEarlier = new Set<string>();
    const planned = new Set<string>();
    for (const q of this.queue.ordered()) {
      const m = this.config.models.get(q.model)!;
      const r = this.pick(m.name);
      if (r !== undefined) {
        this.queue.remove(q.id);
        r.inFlight.add(q.id);
        r.lastUsedMs = now;
        this.used(m.name);
        this.inFlight.set(q.id, r.id);
        this.effects.dispatch(q.id, r.id, r.endpoint!);
      } else if (!planned.has(m.name)) {
        planned.add(m.name);
        for (let n = this.wanted(m) - this.serving(m.name).length; n > 0; n--) {
          if (!this.planStart(m, now, neededEarlier)) break;
        }
      }
      neededEarlier.add(m.name);
    }
  }

  /** Models below replicas.min get theirs (stopping nothing a request waits for). */
  private keepMinimum(): void {
    const now = this.clock.now();
    const waitedFor = new Set(this.queue.ordered().map((q) => q.model));
    for (const m of this.config.models.values()) {
      for (let n = m.minReplicas - this.serving(m.name).length; n > 0; n--) {
        if (!this.planStart(m, now, waitedFor)) break;
      }
    }
  }

  /** Waiting replicas whose pilot has room now (what they displace is gone) start. */
  private startWaiting(now: number): void {
    for (const r of this.replicas.values()) {
      if (r.state !== 'waiting') continue;
      const p = this.pilots.get(r.pilot);
      if (p === undefined) continue;
      const free = this.free(p, (o) => o !== r);
      if (free.cores + 1e-9 < r.model.uses.cores || free.gpus + 1e-9 < r.model.uses.gpus) continue;
      r.state = 'starting';
      r.startedMs = now;
      this.effects.startReplica(r.id, r.model, r.pilot);
      this.effects.record({
        type: 'replica_starting',
        model: r.model.name,
        replica: r.id,
        pilot: r.pilot,
        ...(r.replaces !== undefined ? { replaces: r.replaces } : {}),
      });
    }
  }

  /**
   * Places one more replica of `m` (for `replacing`, on another pilot with time left): the
   * pilot where it displaces least, and drains what it displaces (the policy's stops
   * everywhere, the least recently used on that pilot for room). False when it cannot now.
   */
  private planStart(
    m: CompiledModel,
    now: number,
    protect: ReadonlySet<string>,
    replacing?: Replica,
  ): boolean {
    const running = this.runningModels();
    const policy = this.config.swapper.stopsFor(m.name, running);
    if (policy.some((name) => protect.has(name))) return false;
    const leaving = (o: Replica): boolean =>
      policy.includes(o.model.name) || o.state === 'draining' || o.state === 'stopping';
    let best: { pilot: RouterPilot; stops: string[]; free: number; left: number } | undefined;
    let anyHolds = false;
    for (const p of this.pilots.values()) {
      if (replacing !== undefined && p.uid === replacing.pilot) continue;
      if (p.cores < m.uses.cores || p.gpus + 1e-9 < m.uses.gpus) continue;
      anyHolds = true;
      if (!this.hasTimeLeft(p, m, now)) continue;
      const free = this.free(p, (o) => !leaving(o));
      const candidates = [...this.replicas.values()]
        .filter((o) => o.pilot === p.uid && !leaving(o) && o.model.name !== m.name)
        .filter((o) => !protect.has(o.model.name) && o.state !== 'waiting')
        .map((o) => ({
          id: o.id,
          model: o.model.name,
          uses: o.model.uses,
          inFlight: o.inFlight.size,
          lastUsedMs: o.lastUsedMs,
        }));
      const stops = roomStops(m.uses, free, candidates, (n) => this.config.swapper.evictable(n));
      if (stops === undefined) continue;
      // the fewest stopped, then the most time left, then where it fits tightest
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
    if (best === undefined) {
      if (!anyHolds && this.pilots.size > 0 && replacing === undefined) this.refuseTooLarge(m);
      return false;
    }
    const stopped = new Set<string>();
    for (const o of [...this.replicas.values()]) {
      if (o.state === 'draining' || o.state === 'stopping') continue;
      if (policy.includes(o.model.name)) {
        this.drain(o, 'swap');
        stopped.add(o.model.name);
      } else if (best.stops.includes(o.id)) {
        this.drain(o, 'room');
        stopped.add(o.model.name);
      }
    }
    if (stopped.size > 0) {
      this.effects.record({ type: 'swap', model: m.name, stopped: [...stopped] });
    }
    // a task uid: 128 of letters, digits, '.', '_', '-' (a model name may hold more)
    const name = m.name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64);
    const id = `${this.uidPrefix}${name}.${this.replicaSeq++}`;
    const r: Replica = {
      id,
      model: m,
      pilot: best.pilot.uid,
      state: 'waiting',
      inFlight: new Set(),
      lastUsedMs: now,
    };
    if (replacing !== undefined) {
      r.replaces = replacing.id;
      replacing.replacedBy = id;
    }
    this.replicas.set(id, r);
    return true;
  }

  /** No pilot could ever hold one replica: the requests waiting for it are refused. */
  private refuseTooLarge(m: CompiledModel): void {
    const most = [...this.pilots.values()].reduce(
      (a, p) => ({ cores: Math.max(a.cores, p.cores), gpus: Math.max(a.gpus, p.gpus) }),
      { cores: 0, gpus: 0 },
    );
    const error: RouteError = {
      status: 503,
      code: 'E_NO_ROOM',
      message: `model '${m.name}' needs ${m.uses.cores} cores and ${m.uses.gpus} GPUs per replica; the largest pilot has ${most.cores} cores and ${most.gpus} GPUs`,
    };
    for (const q of this.queue.ordered()) {
      if (q.model !== m.name) continue;
      this.queue.remove(q.id);
      this.effects.reject(q.id, error);
    }
  }

  private failedStart(m: CompiledModel, reason: string): void {
    const st = this.stateOf(m.name);
    if (++st.failedStarts < FAILED_STARTS) return;
    st.failedStarts = 0;
    // a replica that serves still takes them (the failed one was a second, or a replacement)
    if (this.replicasOf(m.name).some((r) => r.state === 'ready')) return;
    for (const q of this.queue.ordered()) {
      if (q.model !== m.name) continue;
      this.queue.remove(q.id);
      this.effects.reject(q.id, {
        status: 502,
        code: 'E_MODEL_FAILED',
        message: `model '${m.name}' failed to start ${FAILED_STARTS} times in a row: ${reason}`,
      });
    }
  }

  private drain(r: Replica, why: StopWhy): void {
    if (r.state === 'draining' || r.state === 'stopping') return;
    if (r.state === 'waiting') {
      this.replicas.delete(r.id);
      return;
    }
    r.stopWhy = why;
    this.effects.record({ type: 'replica_stopping', model: r.model.name, replica: r.id, why });
    if (r.state === 'starting' || r.inFlight.size === 0) {
      r.state = 'stopping';
      this.effects.stopReplica(r.id);
      return;
    }
    r.state = 'draining';
    r.drainSinceMs = this.clock.now();
  }

  // ---- what the decisions read -------------------------------------------------------------

  /** A ready replica of the model with room for one more request: the fewest in flight. */
  private pick(model: string): Replica | undefined {
    let best: Replica | undefined;
    for (const r of this.replicas.values()) {
      if (r.model.name !== model || r.state !== 'ready') continue;
      if (r.inFlight.size >= r.model.concurrency) continue;
      if (best === undefined || r.inFlight.size < best.inFlight.size) best = r;
    }
    return best;
  }

  /** Replicas that serve or will: waiting, starting, ready; one being replaced counts once. */
  private serving(model: string): Replica[] {
    return this.replicasOf(model).filter(
      (r) =>
        (r.state === 'waiting' || r.state === 'starting' || r.state === 'ready') &&
        r.replaces === undefined,
    );
  }

  /** Replicas the queue asks for: enough for what is in flight and waiting, within min..max. */
  private wanted(m: CompiledModel): number {
    const waiting = this.queue.waiting(m.name);
    const busy = this.serving(m.name).reduce((n, r) => n + r.inFlight.size, 0);
    const need = Math.ceil((waiting + busy) / m.concurrency);
    return Math.min(m.maxReplicas, Math.max(need, m.minReplicas, waiting > 0 ? 1 : 0));
  }

  private replicasOf(model: string): Replica[] {
    return [...this.replicas.values()].filter((r) => r.model.name === model);
  }

  private runningModels(): RunningModel[] {
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
  private free(p: RouterPilot, counts: (r: Replica) => boolean): Resources {
    const free = { cores: p.cores, gpus: p.gpus };
    for (const r of this.replicas.values()) {
      if (r.pilot !== p.uid || !counts(r)) continue;
      free.cores -= r.model.uses.cores;
      free.gpus -= r.model.uses.gpus;
    }
    return free;
  }

  private hasTimeLeft(p: RouterPilot, m: CompiledModel, now: number): boolean {
    return p.drainAtMs === undefined || p.drainAtMs - now > this.lead(m);
  }

  private lead(m: CompiledModel): number {
    const load = this.stateOf(m.name).lastLoadMs;
    return m.handoffLeadMs ?? Math.max(MIN_HANDOFF_LEAD_MS, 2 * (load ?? 0));
  }

  private handoffAt(r: Replica): number | undefined {
    const p = this.pilots.get(r.pilot);
    if (p?.drainAtMs === undefined) return undefined;
    return p.drainAtMs - this.lead(r.model);
  }

  private stateOf(model: string): ModelState {
    return this.modelState.get(model)!;
  }

  private used(model: string): void {
    this.stateOf(model).lastUsedMs = this.clock.now();
  }

  /** One timer, at the next deadline: a queue timeout, an idle TTL, a drain grace, a handoff. */
  private arm(now: number): void {
    let next = Infinity;
    for (const q of this.queue.ordered()) {
      next = Math.min(next, q.atMs + this.config.models.get(q.model)!.queueTimeoutMs);
    }
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
    if (next === this.timerAt) return;
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAt = next;
    if (next === Infinity) return;
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.pump();
      },
      Math.max(0, next - now),
    );
  }
}
