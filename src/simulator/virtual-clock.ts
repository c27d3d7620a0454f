import type { Clock, Timer } from '../lib/clock';
import { EventHeap } from '../lib/event-heap';

/**
 * A Clock whose time moves only when the simulation steps it: from one event to the next, never
 * with the wall clock. Besides the timers of the Clock interface (what the cores may arm), it
 * holds plain numbered events (`at`), e.g. a task's end, which cost no closure each.
 * Events at the same time come out in the order they were added.
 */
export class VirtualClock implements Clock {
  private t: number;
  private readonly heap = new EventHeap();
  /** Timers by id; an event payload below 0 is timer -(payload + 1). */
  private readonly timers = new Map<number, () => void>();
  private timerIds = 0;

  constructor(start = 0) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const id = this.timerIds++;
    this.timers.set(id, fn);
    this.heap.push(this.t + Math.max(0, ms), -(id + 1));
    return { cancel: () => void this.timers.delete(id) };
  }

  /** Adds event `payload` (an integer from 0 to 2^31 - 1) at time `t` (not before now). */
  at(t: number, payload: number): void {
    this.heap.push(Math.max(t, this.t), payload);
  }

  /** Whether any event or timer is pending (canceled timers count until their time). */
  get pending(): boolean {
    return this.heap.size > 0;
  }

  /** The time of the next event, if any. */
  get next(): number | undefined {
    return this.heap.peekTime();
  }

  /**
   * Moves to the time of the next event and runs everything due then: timers are called, plain
   * events go to `onEvent`, in the order they were added (also those added meanwhile for the
   * same time). Returns false when nothing was pending.
   */
  step(onEvent: (payload: number) => void): boolean {
    const t = this.heap.peekTime();
    if (t === undefined) return false;
    this.t = t;
    while (this.heap.peekTime() === t) {
      const p = this.heap.pop();
      if (p >= 0) {
        onEvent(p);
        continue;
      }
      const fn = this.timers.get(-p - 1);
      this.timers.delete(-p - 1);
      fn?.();
    }
    return true;
  }
}
