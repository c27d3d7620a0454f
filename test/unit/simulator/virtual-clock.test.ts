import { describe, expect, it } from '@jest/globals';
import { EventHeap } from '../../../src/lib/event-heap';
import { VirtualClock } from '../../../src/simulator/virtual-clock';
import { mulberry32 } from '../../../src/lib/prng';

describe('EventHeap', () => {
  it('gives events back by time, ties in the order they were added', () => {
    const h = new EventHeap();
    const rng = mulberry32(7);
    const added: [number, number][] = [];
    for (let i = 0; i < 5000; i++) {
      const t = Math.floor(rng() * 50); // many ties
      h.push(t, i);
      added.push([t, i]);
    }
    const out: number[] = [];
    while (h.size > 0) out.push(h.pop());
    const want = [...added].sort((a, b) => a[0] - b[0] || a[1] - b[1]).map((x) => x[1]);
    expect(out).toEqual(want);
  });
});

describe('VirtualClock', () => {
  it('moves from event to event, never by itself, and runs timers and events of one instant in order', () => {
    const c = new VirtualClock(100);
    const seen: string[] = [];
    c.setTimeout(() => seen.push(`timer@${c.now()}`), 50);
    c.at(150, 1);
    c.at(120, 2);
    const t = c.setTimeout(() => seen.push('canceled'), 10);
    t.cancel();
    expect(c.now()).toBe(100);
    const onEvent = (p: number): void => {
      seen.push(`event${p}@${c.now()}`);
      if (p === 2) c.at(c.now(), 3); // added for the same instant: still this step
    };
    while (c.step(onEvent));
    expect(seen).toEqual(['event2@120', 'event3@120', 'timer@150', 'event1@150']);
    expect(c.now()).toBe(150);
    expect(c.pending).toBe(false);
  });

  it('never goes back: an event for the past happens now', () => {
    const c = new VirtualClock(10);
    c.at(5, 0);
    expect(c.next).toBe(10);
  });
});
