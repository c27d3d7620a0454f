import type { Clock } from '../lib/clock';
import type { RouteError, RouterEffects, StopWhy } from './effects';
import { Holdings, type Replica, type RouterPilot, type RouterSnapshot } from './holdings';
import type { CompiledModel, CompiledRouterConfig } from './models';
import { place } from './placement';
import { DeadlineTimer } from './deadline';
import { RequestQueue, type QueuedRequest } from './queue';
import * as refuse from './refusals';

export type { ReplicaState, RouterPilot, RouterSnapshot } from './holdings';

// The model router's decisions (docs/router.md): which replica a request goes to, when a
// replica starts, where, and what stops to make room, when an idle one stops, when one is
// replaced before its pilot drains. Synchronous handlers on an injected clock; everything it
// does goes through RouterEffects, and comes back as an on*() event.

/** Replicas that may refuse a request's connection before it is answered 502. */
const DISPATCH_TRIES = 3;
/** Replicas that failed to start in a row before the requests waiting for them are refused. */
const FAILED_STARTS = 2;

export class RouterCore {
  private readonly queue = new RequestQueue();
  /** Requests dispatched (in flight): their replica, and the request (to queue it again). */
  private readonly inFlight = new Map<
    string,
    { replica: string; q: QueuedRequest; tries: number }
  >();
  private readonly h: Holdings;
  private seq = 0;
  private replicaSeq = 0;
  private readonly timer: DeadlineTimer;
  private closed = false;
  /** Requests queued again after a replica refused them: how often they were sent. */
  private readonly retried = new Map<string, number>();

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
    this.h = new Holdings(config, clock.now());
    this.timer = new DeadlineTimer(clock, () => this.pump());
  }

  /** A pilot that may run replicas (again, to say it drains). */
  onPilot(p: RouterPilot): void {
    this.h.pilots.set(p.uid, { ...p });
    this.pump();
  }

  /** A pilot ended: its replicas end too (each by onReplicaEnded); nothing new goes there. */
  onPilotGone(uid: string): void {
    this.h.pilots.delete(uid);
    for (const r of this.h.replicas.values()) {
      // placed there and not started: placed again by the next pump
      if (r.pilot === uid && r.state === 'waiting') this.h.replicas.delete(r.id);
    }
    this.pump();
  }

  /** A request for `model` (a name or an alias), served in order of priority then arrival. */
  onRequest(id: string, model: string, priority?: number): void {
    const m = this.config.lookup(model);
    if (m === undefined) {
      return this.effects.reject(id, refuse.unknownModel(model, this.config));
    }
    if (this.queue.waiting(m.name) >= m.queueLimit) {
      return this.effects.reject(id, refuse.queueFull(m));
    }
    const now = this.clock.now();
    const q = { id, model: m.name, priority: priority ?? m.priority, seq: this.seq++, atMs: now };
    // nothing waits, a replica has room: it goes there now (what the pump would do, less its work)
    const r = this.queue.size === 0 && !this.closed ? this.h.pick(m.name) : undefined;
    if (r === undefined) {
      this.queue.add(q);
      return this.pump();
    }
    this.send(r, q, now);
    this.arm(now);
  }

  /** A request ended (answered, failed or its client gone): waiting or in flight. */
  onRequestDone(id: string): void {
    const replica = this.inFlight.get(id)?.replica;
    if (replica !== undefined) {
      this.inFlight.delete(id);
      const r = this.h.replicas.get(replica);
      if (r !== undefined) {
        r.inFlight.delete(id);
        r.lastUsedMs = this.clock.now();
        this.h.used(r.model.name, this.clock.now());
        this.h.stateOf(r.model.name).served++;
        // a ready replica done with a request, none waiting: only its idle deadline moved
        if (r.state === 'ready' && this.queue.size === 0) {
          return this.arm(this.clock.now());
        }
      }
    } else if (!this.queue.remove(id)) return;
    this.retried.delete(id);
    this.pump();
  }

  /**
   * A request never reached its replica (its connection was refused): the replica is taken to
   * be gone (stopped, and replaced as the queue asks), the request goes back to its place in
   * the queue, unless it was refused this way DISPATCH_TRIES times.
   */
  onDispatchFailed(id: string, reason: string): void {
    const f = this.inFlight.get(id);
    if (f === undefined) return;
    this.inFlight.delete(id);
    const r = this.h.replicas.get(f.replica);
    if (r !== undefined) {
      r.inFlight.delete(id);
      this.drain(r, 'unreachable');
    }
    if (f.tries >= DISPATCH_TRIES) {
      this.effects.reject(id, refuse.refusedTooOften(f.q.model, f.tries, reason));
    } else {
      this.retried.set(id, f.tries);
      this.queue.add(f.q);
    }
    this.pump();
  }

  /** A replica's connection failed under a request: it takes no more (stopped, replaced). */
  onReplicaBroken(id: string): void {
    const r = this.h.replicas.get(id);
    if (r === undefined) return;
    this.drain(r, 'unreachable');
    this.pump();
  }

  /** A replica's service is ready at `endpoint`, on `node` when known. */
  onReplicaReady(id: string, endpoint: string, node?: string): void {
    const r = this.h.replicas.get(id);
    if (r === undefined || (r.state !== 'starting' && r.state !== 'waiting')) return;
    const loadMs = this.h.ready(r, endpoint, node, this.clock.now());
    this.effects.record({
      type: 'replica_ready',
      model: r.model.name,
      replica: id,
      pilot: r.pilot,
      loadMs,
    });
    const old = r.replaces !== undefined ? this.h.replicas.get(r.replaces) : undefined;
    if (old !== undefined) this.drain(old, 'handoff');
    r.replaces = undefined;
    this.pump();
  }

  /** A replica's task ended (stopped, failed, its pilot gone), with the reason it gives. */
  onReplicaEnded(id: string, reason: string): void {
    const r = this.h.replicas.get(id);
    if (r === undefined) return;
    this.h.replicas.delete(id);
    const expected = r.state === 'stopping';
    if (!expected) this.h.stateOf(r.model.name).lost++;
    this.effects.record({
      type: 'replica_ended',
      model: r.model.name,
      replica: id,
      reason,
      expected,
      ...(r.endpoint !== undefined ? { endpoint: r.endpoint } : {}),
    });
    for (const req of r.inFlight) {
      this.inFlight.delete(req);
      this.retried.delete(req);
      this.effects.reject(req, refuse.replicaGone(r, expected, reason));
    }
    if (r.replacedBy !== undefined) {
      const next = this.h.replicas.get(r.replacedBy);
      if (next !== undefined) next.replaces = undefined;
    }
    if (r.replaces !== undefined) {
      const old = this.h.replicas.get(r.replaces);
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
    for (const r of this.h.replicasOf(m.name)) {
      if (r.state === 'waiting') this.h.replicas.delete(r.id);
      else {
        ids.push(r.id);
        this.drain(r, 'unload');
      }
    }
    this.pump();
    return ids;
  }

  snapshot(): RouterSnapshot {
    return this.h.snapshot(this.config, (m) => this.queue.waiting(m));
  }

  /** Closing: no decision any more, every replica stopped; the uids whose ends to wait for. */
  close(): string[] {
    this.closed = true;
    this.timer.cancel();
    for (const r of [...this.h.replicas.values()]) this.drain(r, 'close', true);
    return [...this.h.replicas.keys()];
  }

  // ---- the decisions -----------------------------------------------------------------------

  /** Everything that follows from the state now; then a timer for the next deadline. */
  private pump(): void {
    if (this.closed) return;
    const now = this.clock.now();
    this.expireQueued(now);
    this.stopIdle(now);
    this.stopDrained(now);
    this.handOff(now);
    this.serveQueue(now);
    this.keepMinimum(now);
    this.startWaiting(now);
    this.arm(now);
  }

  private expireQueued(now: number): void {
    for (const q of this.queue.ordered()) {
      const m = this.config.models.get(q.model)!;
      if (now - q.atMs < m.queueTimeoutMs) continue;
      this.queue.remove(q.id);
      this.effects.reject(q.id, refuse.queueTimeout(m));
    }
  }

  /** A replica idle for its model's idleTtlS stops, down to replicas.min, unless requests wait. */
  private stopIdle(now: number): void {
    for (const m of this.config.models.values()) {
      if (m.idleTtlMs === 0 || this.queue.waiting(m.name) > 0) continue;
      let serving = this.h.serving(m.name).length;
      for (const r of this.h.serving(m.name)) {
        if (serving <= m.minReplicas) break;
        if (r.state === 'ready' && r.inFlight.size === 0 && now - r.lastUsedMs >= m.idleTtlMs) {
          this.drain(r, 'idle');
          serving--;
        }
      }
    }
  }

  private stopDrained(now: number): void {
    for (const r of this.h.replicas.values()) {
      if (r.state !== 'draining') continue;
      if (r.inFlight.size === 0 || now - r.drainSinceMs! >= r.model.stopGraceMs) {
        r.state = 'stopping';
        this.effects.stopReplica(r.id);
      }
    }
  }

  /** A ready replica whose pilot drains within its model's lead gets a replacement elsewhere. */
  private handOff(now: number): void {
    for (const r of [...this.h.replicas.values()]) {
      if (r.state !== 'ready' || r.replacedBy !== undefined) continue;
      const at = this.h.handoffAt(r);
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
      const r = this.h.pick(m.name);
      if (r !== undefined) {
        this.queue.remove(q.id);
        this.send(r, q, now);
      } else if (!planned.has(m.name)) {
        planned.add(m.name);
        for (
          let n = this.h.wanted(m, this.queue.waiting(m.name)) - this.h.serving(m.name).length;
          n > 0;
          n--
        ) {
          if (!this.planStart(m, now, neededEarlier)) break;
        }
      }
      neededEarlier.add(m.name);
    }
  }

  /** Request `q` goes to replica `r`. */
  private send(r: Replica, q: QueuedRequest, now: number): void {
    r.inFlight.add(q.id);
    r.lastUsedMs = now;
    this.h.used(r.model.name, now);
    const tries = (this.retried.get(q.id) ?? 0) + 1;
    this.retried.delete(q.id);
    this.inFlight.set(q.id, { replica: r.id, q, tries });
    this.effects.dispatch(q.id, r.id, r.endpoint!);
  }

  /** Models below replicas.min get theirs (stopping nothing a request waits for). */
  private keepMinimum(now: number): void {
    const waitedFor = new Set(this.queue.ordered().map((q) => q.model));
    for (const m of this.config.models.values()) {
      for (let n = m.minReplicas - this.h.serving(m.name).length; n > 0; n--) {
        if (!this.planStart(m, now, waitedFor)) break;
      }
    }
  }

  /** Waiting replicas whose pilot has room now (what they displace is gone) start. */
  private startWaiting(now: number): void {
    for (const r of this.h.replicas.values()) {
      if (r.state !== 'waiting') continue;
      const p = this.h.pilots.get(r.pilot);
      if (p === undefined) continue;
      const free = this.h.free(p, (o) => o !== r);
      if (free.cores + 1e-9 < r.model.uses.cores || free.gpus + 1e-9 < r.model.uses.gpus) continue;
      r.state = 'starting';
      r.startedMs = now;
      this.effects.startReplica(r.id, r.model, r.pilot, this.h.stateOf(r.model.name).nodes);
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
    const where = place(this.h, this.config.swapper, m, now, protect, replacing);
    if (where === 'never') {
      if (replacing === undefined) this.refuseWaiting(m, refuse.noRoom(m, this.h.pilots.values()));
      return false;
    }
    if (where === undefined) return false;
    const stopped = new Set<string>();
    for (const o of [...this.h.replicas.values()]) {
      if (o.state === 'draining' || o.state === 'stopping') continue;
      if (where.policy.includes(o.model.name)) {
        this.drain(o, 'swap');
        stopped.add(o.model.name);
      } else if (where.room.includes(o.id)) {
        this.drain(o, 'room');
        stopped.add(o.model.name);
      }
    }
    if (stopped.size > 0) {
      this.h.stateOf(m.name).swaps++;
      this.effects.record({ type: 'swap', model: m.name, stopped: [...stopped] });
    }
    // a task uid: 128 of letters, digits, '.', '_', '-' (a model name may hold more)
    const name = m.name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64);
    const id = `${this.uidPrefix}${name}.${this.replicaSeq++}`;
    const r: Replica = {
      id,
      model: m,
      pilot: where.pilot,
      state: 'waiting',
      inFlight: new Set(),
      lastUsedMs: now,
    };
    if (replacing !== undefined) {
      r.replaces = replacing.id;
      replacing.replacedBy = id;
    }
    this.h.replicas.set(id, r);
    return true;
  }

  /** The requests waiting for the model get `error`. */
  private refuseWaiting(m: CompiledModel, error: RouteError): void {
    for (const q of this.queue.ordered()) {
      if (q.model !== m.name) continue;
      this.queue.remove(q.id);
      this.effects.reject(q.id, error);
    }
  }

  private failedStart(m: CompiledModel, reason: string): void {
    const st = this.h.stateOf(m.name);
    if (++st.failedStarts < FAILED_STARTS) return;
    st.failedStarts = 0;
    // a replica that serves still takes them (the failed one was a second, or a replacement)
    if (this.h.replicasOf(m.name).some((r) => r.state === 'ready')) return;
    this.refuseWaiting(m, refuse.failedToStart(m, FAILED_STARTS, reason));
  }

  /** Stops `r` once its requests are done (within its grace), or `atOnce` (a draining one too). */
  private drain(r: Replica, why: StopWhy, atOnce = false): void {
    if (r.state === 'stopping' || (r.state === 'draining' && !atOnce)) return;
    if (r.state === 'waiting') {
      this.h.replicas.delete(r.id);
      return;
    }
    if (r.state !== 'draining') {
      r.stopWhy = why;
      this.effects.record({ type: 'replica_stopping', model: r.model.name, replica: r.id, why });
    }
    if (atOnce || r.state === 'starting' || r.inFlight.size === 0) {
      r.state = 'stopping';
      this.effects.stopReplica(r.id);
      return;
    }
    r.state = 'draining';
    r.drainSinceMs = this.clock.now();
  }

  /** The timer at the next deadline: a queue timeout, an idle TTL, a drain grace, a handoff. */
  private arm(now: number): void {
    let next = this.h.nextReplicaDeadline(now);
    for (const q of this.queue.ordered()) {
      next = Math.min(next, q.atMs + this.config.models.get(q.model)!.queueTimeoutMs);
    }
    this.timer.arm(next, now);
  }
}
