import type { NodeState } from './node-state';
import type { Placement } from './placement';
import { rankFitsSize, ranksPerEmptyNode, type Request } from './request';
import { byPriority, type Entry, type Shape } from './shapes';

/**
 * Backfill without starvation. When the first task in the scheduler's order (the head) does not
 * fit, later tasks that fit may start ahead of it (durations are unknown, so a reservation at
 * once would idle the cores the head cannot use yet); once `limit` of them have, nodes that can
 * hold it are reserved for it (the ones with the most free capacity, Placement.hold), and other
 * tasks start ahead of it only on nodes that are not reserved. Reserved nodes only drain, so the
 * head starts at the latest when the tasks running there end. Only a task before it in the order
 * (higher priority, or of equal priority submitted earlier and staged late) can take the head's
 * place. While the head waits to open its colocate group, no other task opens that group
 * (elsewhere, Placement.opensHeadGroup).
 *
 * Pure: the core tells it what started, left or was blocked, from its handlers; it reads the
 * core's waiting shapes and holds nodes through the Placement.
 */
export class Backfill {
  /** The head, while it does not fit and later tasks may still pass it (see limit). */
  private passable: { shape: Shape; entry: Entry } | undefined;

  constructor(
    /** How many later tasks may start ahead of the head that does not fit (0: reserve at once). */
    readonly limit: number,
    private readonly placement: Placement,
    /** The core's waiting shapes, by request key, and waiting tasks by uid. */
    private readonly shapes: ReadonlyMap<string, Shape>,
    private readonly waitingIn: ReadonlyMap<string, Shape>,
    /** A reservation ended: every blocked shape must be tried again, in another round. */
    private readonly dropped: () => void,
  ) {}

  /**
   * Keeps nodes reserved for the head (the first waiting task by priority, then age) while it
   * does not fit. A task waiting for a launcher is no head: nodes held for it would idle while
   * it waits for what nodes cannot give (it holds none; tasks that need no launcher pass it).
   */
  update(): void {
    let head: { shape: Shape; uid: string } | undefined;
    for (const s of this.shapes.values()) {
      const e = s.queue[s.head];
      if (e === undefined || s.launcher === true) continue;
      if (head === undefined || byPriority(s, head.shape) < 0) head = { shape: s, uid: e.task.uid };
    }
    const held = this.placement.reservedFor;
    if (held !== undefined && held === head?.uid) return;
    this.drop();
    this.passable = undefined;
    if (head === undefined || !head.shape.blocked) return;
    const entry = head.shape.queue[head.shape.head]!;
    if ((entry.passed ?? 0) >= this.limit) this.reserve(head.uid, head.shape.req);
    else this.passable = { shape: head.shape, entry };
  }

  /** Called when `shape`'s first task did not fit: moves the reservation if it is the new head. */
  blocked(shape: Shape): void {
    const held = this.placement.reservedFor;
    const holder = held === undefined ? undefined : this.waitingIn.get(held);
    if (holder === undefined || byPriority(shape, holder) < 0) this.update();
  }

  /** Task `uid`, the first of `shape`, started. */
  started(uid: string, shape: Shape): void {
    if (this.placement.reservedFor === uid) this.drop();
    else if (this.passable !== undefined) this.passedBy(shape);
  }

  /** A waiting task left its queue (canceled, too late), as `entry`. */
  left(uid: string, entry: Entry): void {
    if (this.placement.reservedFor === uid) this.drop();
    if (this.passable?.entry === entry) this.passable = undefined;
  }

  /** The head of a shape, task `uid`, never starts here (the pilot drains too soon). */
  stranded(uid: string): void {
    if (this.placement.reservedFor === uid) this.drop();
    if (this.passable?.entry.task.uid === uid) this.passable = undefined;
  }

  /** Colocate group `tag` is no longer bound to a node. */
  ungrouped(tag: string): void {
    // A head of this tag had the group's node reserved; it may now go anywhere, so reserve anew.
    const held = this.placement.reservedFor;
    const holder = held === undefined ? undefined : this.waitingIn.get(held);
    if (holder?.req.colocate === tag) this.drop();
  }

  drop(): void {
    // Every blocked shape is tried again, not only those the freed nodes could serve: the
    // next head must get its reservation before anything behind it starts (the property
    // tests show that the narrower re-try lets lower-priority tasks overtake).
    if (this.placement.unhold()) this.dropped();
  }

  /**
   * A task of `shape` started ahead of the head that does not fit: counted, and once `limit`
   * tasks have, nodes are reserved for the head before anything else starts.
   */
  private passedBy(shape: Shape): void {
    const p = this.passable!;
    if (p.shape === shape) return;
    if (p.shape.queue[p.shape.head] !== p.entry || !p.shape.blocked || p.shape.launcher === true) {
      this.passable = undefined; // it started, or left: the next round finds the new head
      return;
    }
    p.entry.passed = (p.entry.passed ?? 0) + 1;
    if (p.entry.passed >= this.limit) {
      this.passable = undefined;
      this.reserve(p.entry.task.uid, p.shape.req);
    }
  }

  /** Reserves the nodes with the most free capacity that together can hold the request. */
  private reserve(uid: string, r: Request): void {
    const nodes: NodeState[] = [];
    const p = this.placement;
    const bound = r.colocate !== undefined ? p.colocated.get(r.colocate)?.node : undefined;
    if (bound !== undefined) {
      if (bound.reservedFor === undefined && p.mayUse(uid, r, bound)) nodes.push(bound);
    } else {
      let ranks = 0;
      const need = r.colocate !== undefined ? 1 : r.ranks;
      for (const n of this.reservable()) {
        if (r.home && n !== p.home) continue;
        const k = ranksPerEmptyNode(r, n.spec);
        if (k === 0 || !rankFitsSize(r, n.spec)) continue;
        if (r.colocate !== undefined && k < r.ranks) continue;
        nodes.push(n);
        ranks += r.colocate !== undefined ? 1 : k;
        if (ranks >= need) break;
      }
    }
    if (nodes.length > 0) p.hold(uid, nodes);
  }

  /**
   * Candidates for a reservation: open nodes, most free first, then nodes an exclusive tag owns
   * (not indexed), so that a head needing them too gets them: a reservation that cannot hold
   * the head would leave it to compete with backfill for the rest, possibly forever.
   */
  private *reservable(): Generator<NodeState> {
    yield* this.placement.index.mostFree();
    for (const owned of this.placement.exclusive.values()) yield* owned;
  }
}
