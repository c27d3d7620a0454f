import { EventHeap } from '../../lib/event-heap';
import type { Request } from './request';
import type { Hold } from './slots';

/** A running task's slots, and when it is expected to give them back. */
export interface Allocation {
  req: Request;
  holds: Hold[];
  /** Its start plus walltimeS, else timeoutS (clock ms; undefined: unknown or not tracked). */
  endsAt?: number | undefined;
  /** A follower queued on its slots: they go back when the follower ends, not at this end. */
  handedOn?: boolean;
  /** It holds one of the pilot's launchers (launchers.ts), given back at its end. */
  launcher?: boolean;
  /** Its place in RunningEnds while it runs. */
  slot?: number | undefined;
}

/**
 * Running tasks with a known end, in a heap by end, kept as tasks start and end so that a plan
 * reads them in time order without sorting every running task each time. An ended task's entry
 * stays in the heap until it is rebuilt (when ended entries outnumber the running ones) and is
 * skipped when read.
 */
export class RunningEnds {
  private heap = new EventHeap();
  private bySlot: (Allocation | undefined)[] = [];
  private live = 0;

  started(a: Allocation): void {
    if (a.endsAt === undefined) return;
    a.slot = this.bySlot.length;
    this.bySlot.push(a);
    this.heap.push(a.endsAt, a.slot);
    this.live++;
  }

  ended(a: Allocation): void {
    if (a.slot === undefined) return;
    this.bySlot[a.slot] = undefined;
    a.slot = undefined;
    this.live--;
    if (this.bySlot.length > 1_024 && this.live * 2 < this.bySlot.length) this.rebuild();
  }

  /** Allocations whose slots go back at their end, earliest first; reading takes nothing out. */
  *inOrder(): Generator<Allocation> {
    const h = this.heap.clone();
    while (h.size > 0) {
      const a = this.bySlot[h.pop()];
      if (a !== undefined && a.handedOn !== true) yield a;
    }
  }

  private rebuild(): void {
    const live = this.bySlot.filter((a) => a !== undefined);
    this.heap = new EventHeap();
    this.bySlot = [];
    this.live = 0;
    for (const a of live) this.started(a);
  }
}
