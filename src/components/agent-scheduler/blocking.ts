import type { NodeState } from './node-state';
import type { Placement } from './placement';
import { rankFitsFree } from './request';
import { byPriority, type Shape } from './shapes';

/**
 * Which waiting shapes a scheduling round tries. A shape is ready while its first task may fit;
 * once it did not, it is blocked until capacity it could use comes back: filed under the node
 * its bound colocate group waits on (else under `undefined`), so that a release re-tries only
 * the shapes that can use the node that got capacity back. A shape whose first task waits for
 * a launcher is blocked until one comes back, whatever capacity does. Pure: the core calls it
 * from its handlers.
 */
export class ShapeBlocking {
  /** Shapes whose first task may fit: the only ones a scheduling round tries. */
  private readonly ready = new Set<Shape>();
  /** Blocked shapes, by the node a bound colocate group waits on (else under `undefined`). */
  private readonly blockedOn = new Map<NodeState | undefined, Set<Shape>>();
  /** Shapes whose first task waits for a launcher: tried again when one comes back, only then. */
  private readonly forLauncher = new Set<Shape>();

  constructor(private readonly placement: Placement) {}

  /** A new shape: tried in the next round. */
  added(shape: Shape): void {
    this.ready.add(shape);
  }

  /** The ready shapes, in the order their first tasks come (byPriority). */
  readyInOrder(): Shape[] {
    return [...this.ready].sort(byPriority);
  }

  /** The shape's first task did not fit: it is not tried again until capacity comes back. */
  block(shape: Shape): void {
    shape.blocked = true;
    this.ready.delete(shape);
    const tag = shape.req.colocate;
    const on = tag !== undefined ? this.placement.colocated.get(tag)?.node : undefined;
    let set = this.blockedOn.get(on);
    if (set === undefined) this.blockedOn.set(on, (set = new Set()));
    set.add(shape);
  }

  /** The shape's first task was placed but needs a launcher, and all are in use. */
  waitForLauncher(shape: Shape): void {
    shape.blocked = true;
    shape.launcher = true;
    this.ready.delete(shape);
    this.forLauncher.add(shape);
  }

  /** A launcher came back: the shapes waiting for one are tried again (in the round's order). */
  unblockLaunchers(): void {
    for (const s of this.forLauncher) this.unblock(s);
  }

  unblock(shape: Shape): void {
    if (!shape.blocked) return;
    shape.blocked = false;
    this.blockedIn(shape)?.delete(shape);
    shape.launcher = false;
    this.ready.add(shape);
  }

  /** Every shape blocked on capacity is tried again (those waiting for a launcher stay). */
  unblockAll(): void {
    for (const set of [...this.blockedOn.values()]) for (const sh of [...set]) this.unblock(sh);
  }

  /** The shapes of colocate group `tag` are tried again (it is no longer bound to a node). */
  unblockGroup(tag: string): void {
    for (const set of [...this.blockedOn.values()]) {
      for (const s of [...set]) if (s.req.colocate === tag) this.unblock(s);
    }
  }

  /** A node got capacity back: re-try the shapes that could use it. */
  unblockFor(n: NodeState): void {
    this.unblockIn(this.blockedOn.get(undefined), n);
    this.unblockIn(this.blockedOn.get(n), n);
  }

  /** No task of the shape waits any more. */
  forget(shape: Shape): void {
    this.ready.delete(shape);
    if (shape.blocked) this.blockedIn(shape)?.delete(shape);
  }

  clear(): void {
    this.ready.clear();
    this.blockedOn.clear();
    this.forLauncher.clear();
  }

  /** (Deleting the visited element while iterating a Set is safe.) */
  private unblockIn(set: Set<Shape> | undefined, n: NodeState): void {
    if (set === undefined || set.size === 0) return;
    for (const s of set) {
      const e = s.queue[s.head];
      if (e === undefined) continue;
      if (
        s.req.ranks > 1 ||
        (this.placement.mayUse(e.task.uid, s.req, n) && rankFitsFree(s.req, n))
      ) {
        this.unblock(s);
      }
    }
  }

  /** The set a blocked shape was filed in (see block() and waitForLauncher()). */
  private blockedIn(shape: Shape): Set<Shape> | undefined {
    if (shape.launcher === true) return this.forLauncher;
    const tag = shape.req.colocate;
    const on = tag !== undefined ? this.placement.colocated.get(tag)?.node : undefined;
    const set = this.blockedOn.get(on);
    if (set?.has(shape) === true) return set;
    for (const other of this.blockedOn.values()) if (other.has(shape)) return other;
    return undefined;
  }
}
