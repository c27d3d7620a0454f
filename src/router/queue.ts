/** A request waiting for a replica of its model. */
export interface QueuedRequest {
  id: string;
  model: string;
  priority: number;
  /** Arrival order. */
  seq: number;
  atMs: number;
}

/**
 * The requests waiting, in the order they are served: higher priority first, then arrival.
 * One queue for all models, so that a swap is never caused ahead of requests that came first.
 */
export class RequestQueue {
  private items: QueuedRequest[] = [];
  private readonly perModel = new Map<string, number>();

  get size(): number {
    return this.items.length;
  }

  waiting(model: string): number {
    return this.perModel.get(model) ?? 0;
  }

  add(r: QueuedRequest): void {
    // after every item that goes first: binary search on (priority desc, seq asc)
    let lo = 0;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = this.items[mid]!;
      if (m.priority > r.priority || (m.priority === r.priority && m.seq < r.seq)) lo = mid + 1;
      else hi = mid;
    }
    this.items.splice(lo, 0, r);
    this.perModel.set(r.model, this.waiting(r.model) + 1);
  }

  /** Removes the request; false when it was not waiting. */
  remove(id: string): boolean {
    const i = this.items.findIndex((r) => r.id === id);
    if (i < 0) return false;
    const [r] = this.items.splice(i, 1);
    this.perModel.set(r!.model, this.waiting(r!.model) - 1);
    return true;
  }

  /** In serving order; a copy, so the caller may remove as it goes. */
  ordered(): readonly QueuedRequest[] {
    return [...this.items];
  }
}
