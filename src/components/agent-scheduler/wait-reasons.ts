import type { WaitReason } from '../../generated';
import { COMPONENTS } from '../../states/task-model';
import { GPU_UNIT, type NodeState } from './node-state';
import { describeRequest, rankFitsFree, rankFitsSize, type Request } from './request';

const ME = COMPONENTS.agentScheduler;
/** Names listed in a reason (nodes, tasks): the first few, the rest counted. */
const LISTED = 3;
/** Open nodes looked at for the largest free one that the task may use. */
const OPEN_LOOKS = 64;

/** What the reason of a waiting task reads of the scheduler's state (AgentSchedulerCore). */
export interface WaitView {
  /** Nodes held for a task or owned by an exclusive tag (the nodes not open to every task). */
  held(): Iterable<NodeState>;
  /**
   * Open nodes, most free first (NodeIndex.mostFree): only the first few that could hold the
   * task are looked at, so a reason costs the same on a pilot of 10,000 nodes as on one of 10.
   */
  open(): Iterable<NodeState>;
  /** The agent's node (where function tasks run). */
  home(): NodeState | undefined;
  /** The node a colocate group is bound to, while tasks of it run. */
  colocatedOn(tag: string): NodeState | undefined;
  /** The first waiting task, when it waits to open colocate group `tag` and `uid` is not it. */
  opensGroupFirst(uid: string, tag: string): string | undefined;
  /** The first few running tasks of an exclusive or colocate tag. */
  holders(kind: 'exclusive' | 'colocate', tag: string): string[];
}

/**
 * Why the first waiting task of a blocked shape (`uid`, asking `r`) does not start now. Node by
 * node: one held for another task (a reservation) or owned by another exclusive tag keeps it
 * off; if such a node has room for it, that is the reason, else the room on the nodes it may use
 * is (with the largest free now). Pure; runs when reasons are reported, not per placement.
 */
export function waitReasonOf(uid: string, r: Request, view: WaitView, now: number): WaitReason {
  const base = { component: ME, ts: now, asks: asksOf(r) };
  const said = (kind: WaitReason['kind'], message: string, facts: Partial<WaitReason> = {}) => ({
    kind,
    message,
    ...base,
    ...facts,
  });
  const first = r.colocate !== undefined ? view.opensGroupFirst(uid, r.colocate) : undefined;
  if (first !== undefined) {
    const message = `waiting behind task ${first}, which opens colocate group '${r.colocate}' first`;
    return said('reservation', message, { behind: first });
  }
  const bound = r.colocate !== undefined ? view.colocatedOn(r.colocate) : undefined;
  const reserved = new Map<string, NodeState[]>();
  const owned = new Map<string, NodeState[]>();
  const busy: NodeState[] = [];
  const mine: NodeState[] = [];
  let best: NodeState | undefined;
  const seen = new Set<NodeState>();
  /** Files a node under what keeps the task off it; true when the task may use it. */
  const look = (n: NodeState | undefined): boolean => {
    if (n === undefined || seen.has(n) || !rankFitsSize(r, n.spec)) return false;
    seen.add(n);
    if (n.reservedFor === uid) mine.push(n);
    if (n.reservedFor !== undefined && n.reservedFor !== uid) add(reserved, n.reservedFor, n);
    else if (n.exclusiveTag !== undefined && n.exclusiveTag !== r.exclusive) {
      add(owned, n.exclusiveTag, n);
    } else if (r.exclusive !== undefined && n.exclusiveTag === undefined && n.slots > 0) {
      busy.push(n);
    } else {
      if (best === undefined || moreFree(n, best)) best = n;
      return true;
    }
    return false;
  };
  if (bound !== undefined) look(bound);
  else if (r.home) look(view.home());
  else {
    for (const n of view.held()) look(n);
    let looks = 0;
    // open nodes come most free first: the first the task may use is the largest free
    for (const n of view.open()) if (look(n) || ++looks === OPEN_LOOKS) break;
  }
  // a node kept from it that has room now says more than the room elsewhere
  const roomy = (m: Map<string, NodeState[]>) =>
    [...m].find(([, ns]) => ns.some((n) => rankFitsFree(r, n)));
  const held = roomy(reserved) ?? (best === undefined ? first1(reserved) : undefined);
  if (held !== undefined) {
    const [task, nodes] = held;
    const message =
      `waiting behind task ${task}: node(s) ${names(nodes)} are held for it until it starts ` +
      '(backfill: later tasks start only where they cannot delay the first waiting one)';
    return said('reservation', message, { behind: task, nodes: listed(nodes) });
  }
  const tagged = roomy(owned) ?? (best === undefined ? first1(owned) : undefined);
  if (tagged !== undefined) {
    const [tag, nodes] = tagged;
    const holders = view.holders('exclusive', tag);
    const message =
      `held by exclusive tag '${tag}': node(s) ${names(nodes)} run only tasks of that tag now` +
      (holders.length > 0 ? ` (${holders.join(', ')})` : '');
    return said('tag', message, { tag: { exclusive: tag }, holders, nodes: listed(nodes) });
  }
  if (bound !== undefined && best === bound) {
    const holders = view.holders('colocate', r.colocate!);
    const message =
      `held by colocate tag '${r.colocate}': it must run on node ${bound.name} (beside ` +
      `${holders.join(', ') || 'the tasks of that tag'}), which has ${free(bound)}; ` +
      `it asks ${describeRequest(r)}`;
    return said('tag', message, {
      tag: { colocate: r.colocate! },
      holders,
      nodes: [bound.name],
      largestFree: largest(bound),
    });
  }
  const where = r.ranks > 1 && r.colocate === undefined ? '' : ' on one node';
  const alone =
    r.exclusive !== undefined
      ? `, on a node with nothing else on it (exclusive tag '${r.exclusive}')`
      : '';
  const most = best ?? busy[0];
  const message =
    `waiting for ${describeRequest(r)}${where}${alone}: ` +
    (most === undefined
      ? 'no node it may use'
      : `the most free now is node ${most.name} with ${free(most)}`) +
    (mine.length > 0 ? `; node(s) ${names(mine)} are held for it (first in line)` : '');
  return said('resources', message, most !== undefined ? { largestFree: largest(most) } : {});
}

/** What a reason says a task asks per rank. */
export function asksOf(r: Request): NonNullable<WaitReason['asks']> {
  return { ranks: r.ranks, cores: r.cores, gpus: gpusAsked(r), memMb: r.memMb };
}

function gpusAsked(r: Request): number {
  if (r.gpuIndices !== undefined) return r.gpuIndices.length;
  return r.share > 0 ? r.share / GPU_UNIT : r.gpus;
}

function add(m: Map<string, NodeState[]>, key: string, n: NodeState): void {
  const list = m.get(key);
  if (list === undefined) m.set(key, [n]);
  else list.push(n);
}

function first1(m: Map<string, NodeState[]>): [string, NodeState[]] | undefined {
  return m.entries().next().value;
}

function moreFree(a: NodeState, b: NodeState): boolean {
  const ca = a.freeCores.length;
  const cb = b.freeCores.length;
  return ca !== cb
    ? ca > cb
    : a.wholeGpus !== b.wholeGpus
      ? a.wholeGpus > b.wholeGpus
      : a.memFree > b.memFree;
}

function largest(n: NodeState): { node: string; cores: number; gpus: number; memMb: number } {
  return { node: n.name, cores: n.freeCores.length, gpus: n.wholeGpus, memMb: n.memFree };
}

function free(n: NodeState): string {
  return `${n.freeCores.length} cores, ${n.wholeGpus} GPUs, ${n.memFree} MiB free`;
}

function listed(nodes: readonly NodeState[]): string[] {
  return nodes.slice(0, LISTED).map((n) => n.name);
}

function names(nodes: readonly NodeState[]): string {
  const more = nodes.length > LISTED ? ` and ${nodes.length - LISTED} more` : '';
  return listed(nodes).join(', ') + more;
}

/** Running tasks by tag: a set per tag, one entry per tagged task (kept only while reporting). */
export class TagRuns {
  private readonly byTag = new Map<string, Set<string>>();

  add(tag: string, uid: string): void {
    const set = this.byTag.get(tag);
    if (set === undefined) this.byTag.set(tag, new Set([uid]));
    else set.add(uid);
  }

  remove(tag: string, uid: string): void {
    const set = this.byTag.get(tag);
    if (set?.delete(uid) === true && set.size === 0) this.byTag.delete(tag);
  }

  /** The first `n` tasks of the tag. */
  first(tag: string, n = LISTED): string[] {
    const out: string[] = [];
    for (const uid of this.byTag.get(tag) ?? []) {
      if (out.length === n) break;
      out.push(uid);
    }
    return out;
  }
}

/** The running tasks of each exclusive and of each colocate tag, which reasons name. */
export class TagHolders {
  readonly exclusive = new TagRuns();
  readonly colocate = new TagRuns();

  started(r: Request, uid: string): void {
    if (r.exclusive !== undefined) this.exclusive.add(r.exclusive, uid);
    if (r.colocate !== undefined) this.colocate.add(r.colocate, uid);
  }

  ended(r: Request, uid: string): void {
    if (r.exclusive !== undefined) this.exclusive.remove(r.exclusive, uid);
    if (r.colocate !== undefined) this.colocate.remove(r.colocate, uid);
  }
}

/** Nodes held for the first waiting task, then nodes exclusive tags own (at most 1,024). */
export function* heldNodes(
  reserved: readonly NodeState[] | undefined,
  owned: Iterable<ReadonlySet<NodeState>>,
): Generator<NodeState> {
  let left = 1_024;
  for (const from of [reserved ?? [], ...owned]) {
    for (const n of from) {
      if (left-- === 0) return;
      yield n;
    }
  }
}
