/**
 * The router's requests held or in flight, by id, in slots that are reused: `q<slot>.<n>`,
 * unique by `n`. A Map added to and deleted from at the request rate, its values holding each
 * request's sockets and buffers, cost several µs per request in young-generation collections
 * (bench/router.ts); an array of slots does not.
 */
export class RequestSlots<T extends { id: string }> {
  private readonly slots: (T | undefined)[] = [];
  private readonly free: number[] = [];
  private seq = 0;
  private live = 0;

  get size(): number {
    return this.live;
  }

  /** Holds `make(id)` under a new id; returns it. */
  add(make: (id: string) => T): T {
    const slot = this.free.pop() ?? this.slots.length;
    const item = make(`q${slot}.${this.seq++}`);
    this.slots[slot] = item;
    this.live++;
    return item;
  }

  get(id: string): T | undefined {
    const item = this.slots[slotOf(id)];
    return item !== undefined && item.id === id ? item : undefined;
  }

  /** Lets go of `id`; false when it is not held. */
  delete(id: string): boolean {
    const slot = slotOf(id);
    if (this.slots[slot]?.id !== id) return false;
    this.slots[slot] = undefined;
    this.free.push(slot);
    this.live--;
    return true;
  }

  values(): T[] {
    return this.slots.filter((x): x is T => x !== undefined);
  }
}

function slotOf(id: string): number {
  const n = parseInt(id.slice(1), 10);
  return Number.isInteger(n) ? n : -1;
}
