import { nodeAllowed } from '../shared/node-labels';
import { NodeIndex } from './node-index';
import { NodeState, type NodeResources } from './node-state';
import type { TaskRecord } from '../../generated';
import { rankFitsFree, ranksFitFree, requestOf, type Request } from './request';
import type { Allocation } from './running-ends';
import type { Shape } from './shapes';
import { giveBack, takeExact, takeRank, type Hold } from './slots';

/**
 * The AgentScheduler's nodes and who owns what on them: open nodes indexed by free capacity
 * (NodeIndex, so a placement never scans every node), empty ones (exclusive tasks need one),
 * nodes an exclusive tag owns, the node each colocate group is bound to, and the nodes held for
 * the head (the reservation; when and where is Backfill's decision). `place` puts every rank of
 * a request on nodes it may use now, or nothing. Pure: the core calls it from its handlers.
 */
export class Placement {
  readonly nodes: NodeState[];
  readonly index: NodeIndex;
  /** Open nodes with nothing placed on them (exclusive tasks need one). */
  private readonly empty = new Set<NodeState>();
  readonly exclusive = new Map<string, Set<NodeState>>();
  readonly colocated = new Map<string, { node: NodeState; ranks: number }>();
  /** The agent's own node, where tasks that must run there go (Request.home). */
  readonly home: NodeState | undefined;
  private reservation: { uid: string; nodes: NodeState[] } | undefined;
  /** Nodes by name (placement.prefer names them). */
  private readonly byName = new Map<string, NodeState>();

  constructor(
    specs: readonly NodeResources[],
    /** The core's waiting tasks by uid (to know what the head asks). */
    private readonly waitingIn: ReadonlyMap<string, Shape>,
    homeName?: string,
    laneDepth?: number,
  ) {
    this.nodes = specs.map((spec, i) => new NodeState(i, spec));
    this.home = this.nodes.find((n) => n.spec.name === homeName) ?? this.nodes[0];
    if (this.home !== undefined && laneDepth !== undefined) this.home.laneDepth = laneDepth;
    this.index = new NodeIndex(
      Math.max(0, ...specs.map((n) => n.cores)),
      Math.max(0, ...specs.map((n) => n.gpus)),
    );
    for (const n of this.nodes) {
      this.byName.set(n.name, n);
      this.refile(n);
    }
  }

  /** The task nodes are held for, if any. */
  get reservedFor(): string | undefined {
    return this.reservation?.uid;
  }

  /** The nodes held for it. */
  get reserved(): readonly NodeState[] | undefined {
    return this.reservation?.nodes;
  }

  /** Holds `nodes` for task `uid`: no other task is placed there (the caller dropped any other). */
  hold(uid: string, nodes: NodeState[]): void {
    for (const n of nodes) {
      n.reservedFor = uid;
      this.refile(n);
    }
    this.reservation = { uid, nodes };
  }

  /** Opens the nodes held again; false if none were. */
  unhold(): boolean {
    const r = this.reservation;
    if (r === undefined) return false;
    this.reservation = undefined;
    for (const n of r.nodes) {
      n.reservedFor = undefined;
      this.refile(n);
    }
    return true;
  }

  /** Places every rank of a request, or nothing. */
  place(uid: string, r: Request): Hold[] | undefined {
    const holds: Hold[] = [];
    for (let i = 0; i < r.ranks; i++) {
      // A colocated task's first rank went to a node that holds all its ranks.
      const n = r.colocate !== undefined && i > 0 ? holds[0]!.node : this.candidate(uid, r, holds);
      if (n === undefined) {
        for (const h of holds) giveBack(h);
        for (const h of holds) this.refile(h.node);
        return undefined;
      }
      holds.push(takeRank(n, r));
      this.refile(n);
    }
    this.own(r, holds);
    return holds;
  }

  /**
   * Takes the slots a task held under the agent before this one again (agent.restarts), as
   * place() would have taken them; a task whose slots name no node of the pilot takes none.
   */
  takeOver(tasks: readonly TaskRecord[]): [string, Allocation][] {
    const out: [string, Allocation][] = [];
    for (const t of tasks) {
      const req = requestOf(t.description);
      const slots = t.slots ?? [];
      const nodes = slots.map((s) => this.nodes.find((n) => n.name === s.node));
      if ('error' in req || nodes.some((n) => n === undefined)) continue;
      const holds = slots.map((s, i) => takeExact(nodes[i]!, req, s));
      for (const h of holds) this.refile(h.node);
      this.own(req, holds);
      out.push([t.uid, { req, holds }]);
    }
    return out;
  }

  /** Placed ranks of an exclusive task own their nodes; a colocated one's binds its group. */
  private own(r: Request, holds: Hold[]): void {
    if (r.exclusive !== undefined) {
      let owned = this.exclusive.get(r.exclusive);
      if (owned === undefined) this.exclusive.set(r.exclusive, (owned = new Set()));
      for (const h of holds) {
        h.node.exclusiveTag = r.exclusive;
        h.node.exclusiveSlots++;
        owned.add(h.node);
        this.refile(h.node);
      }
    }
    if (r.colocate !== undefined) {
      const c = this.colocated.get(r.colocate);
      if (c === undefined) this.colocated.set(r.colocate, { node: holds[0]!.node, ranks: r.ranks });
      else c.ranks += r.ranks;
    }
  }

  /**
   * Gives a running task's slots back (an exclusive tag lets go of a node with its last slot
   * there); returns the nodes that got capacity back, for the caller to refile.
   */
  giveBack(a: Allocation): Set<NodeState> {
    const touched = new Set<NodeState>();
    for (const h of a.holds) {
      giveBack(h);
      touched.add(h.node);
      if (a.req.exclusive !== undefined && --h.node.exclusiveSlots === 0) {
        h.node.exclusiveTag = undefined;
        this.exclusive.get(a.req.exclusive)?.delete(h.node);
      }
    }
    return touched;
  }

  /** Takes back a placement that does not start (its task waits for a launcher): as before it. */
  unplace(r: Request, holds: Hold[]): void {
    for (const n of this.giveBack({ req: r, holds })) this.refile(n);
    if (r.colocate !== undefined) this.uncolocate(r.colocate, holds.length);
  }

  /** `ranks` of colocate group `tag` ended; true if that was its last (the group is unbound). */
  uncolocate(tag: string, ranks: number): boolean {
    const c = this.colocated.get(tag);
    if (c === undefined) return false;
    c.ranks -= ranks;
    if (c.ranks > 0) return false;
    this.colocated.delete(tag);
    return true;
  }

  /** A node where one more rank of `r` (task `uid`, holding `placed` so far) may go now, if any. */
  private candidate(uid: string, r: Request, placed: readonly Hold[]): NodeState | undefined {
    // Ranks of a colocated task all go on one node, so its first rank needs room for all.
    const fits =
      r.colocate !== undefined && r.ranks > 1
        ? (n: NodeState) => ranksFitFree(r, n) >= r.ranks
        : (n: NodeState) => rankFitsFree(r, n);
    const ok = (n: NodeState): boolean => this.mayUse(uid, r, n) && fits(n);
    // a lane is a core's worker on the agent's node, whatever its free cores (lanes.ts)
    if (r.lane) return this.home !== undefined && ok(this.home) ? this.home : undefined;
    if (r.colocate !== undefined) {
      const c = this.colocated.get(r.colocate);
      if (c !== undefined) return ok(c.node) ? c.node : undefined;
    }
    if (r.exclusive !== undefined) {
      // A node this task already took a rank on is its own (the tag is set once all are placed).
      const mine = placed.find((h) => rankFitsFree(r, h.node));
      if (mine !== undefined) return mine.node;
    }
    if (this.reservation?.uid === uid) {
      const n = this.reservation.nodes.find(ok);
      if (n !== undefined) return n;
    }
    // a soft rule: the first node named that may take the rank now, else any node
    for (const name of r.prefer ?? []) {
      const n = this.byName.get(name);
      if (n !== undefined && n.open && ok(n)) return n;
    }
    if (r.exclusive !== undefined) {
      for (const n of this.exclusive.get(r.exclusive) ?? []) if (ok(n)) return n;
      for (const n of this.empty) if (ok(n)) return n;
      return undefined;
    }
    if (r.share > 0) {
      return this.index.findPartial(r.cores, r.share, ok) ?? this.index.findWhole(r.cores, 1, ok);
    }
    const gpus = r.gpuIndices?.length ?? r.gpus;
    return this.index.findWhole(r.cores, gpus, ok);
  }

  /** Whether task `uid` may take a rank of `r` on `n` by the ownership rules (capacity apart). */
  mayUse(uid: string, r: Request, n: NodeState): boolean {
    if (n.reservedFor !== undefined && n.reservedFor !== uid) return false;
    if (r.home && n !== this.home) return false;
    if (r.where !== undefined && !nodeAllowed(r.where, n.spec.name, n.spec.labels ?? {})) {
      return false;
    }
    if (r.colocate !== undefined && this.opensHeadGroup(uid, r.colocate)) return false;
    if (r.exclusive !== undefined) {
      return n.exclusiveTag === r.exclusive || (n.exclusiveTag === undefined && n.slots === 0);
    }
    return n.exclusiveTag === undefined;
  }

  /**
   * Whether task `uid` would open the colocate group `tag` while the head, of that tag too,
   * waits to open it: the group would then be bound away from the nodes reserved for the head.
   */
  opensHeadGroup(uid: string, tag: string): boolean {
    const r = this.reservation;
    if (r === undefined || r.uid === uid || this.colocated.has(tag)) return false;
    return this.waitingIn.get(r.uid)?.req.colocate === tag;
  }

  /** Keeps the index and the empty set in line with a node's capacity and ownership. */
  refile(n: NodeState): void {
    if (n.open) {
      this.index.update(n);
      if (n.slots === 0) this.empty.add(n);
      else this.empty.delete(n);
    } else {
      this.index.remove(n);
      this.empty.delete(n);
    }
  }

  /** Free capacity per node (for tests and status). */
  freeCapacity(): { node: string; cores: number; gpuFree: number[]; memMb: number }[] {
    return this.nodes.map((n) => ({
      node: n.name,
      cores: n.freeCores.length,
      gpuFree: [...n.gpuFree],
      memMb: n.memFree,
    }));
  }
}
