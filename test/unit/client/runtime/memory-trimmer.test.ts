import { describe, expect, it } from '@jest/globals';
import { MemoryTrimmer } from '../../../../src/client/runtime/memory-trimmer';
import { FakeClock } from '../../../support/fake-clock';

/** The trimmer with a fake clock, recording each release as [time, what]. */
function setup(opts: { quietMs?: number; heapReduceAfter?: number } = {}): {
  clock: FakeClock;
  calls: [number, string][];
  trimmer: MemoryTrimmer;
} {
  const clock = new FakeClock(0);
  const calls: [number, string][] = [];
  const release = {
    trim: () => void calls.push([clock.now(), 'trim']),
    reduceHeap: () => void calls.push([clock.now(), 'reduceHeap']),
  };
  return { clock, calls, trimmer: new MemoryTrimmer(release, clock, opts) };
}

describe('MemoryTrimmer', () => {
  it('trims once, quietMs after the last activity', () => {
    const { clock, calls, trimmer } = setup();
    trimmer.activity(10);
    clock.advance(600);
    trimmer.activity(10); // the quiet spell starts again here
    clock.advance(999);
    expect(calls).toEqual([]);
    clock.advance(1);
    expect(calls).toEqual([[1_600, 'trim']]);
    clock.advance(10_000);
    expect(calls).toHaveLength(1);
    expect(clock.pending()).toBe(0);
  });

  it('never trims without activity, and trims again after new activity', () => {
    const { clock, calls, trimmer } = setup({ quietMs: 500 });
    clock.advance(5_000);
    expect(calls).toEqual([]);
    trimmer.activity(1);
    clock.advance(500);
    trimmer.activity(1);
    clock.advance(500);
    expect(calls).toEqual([
      [5_500, 'trim'],
      [6_000, 'trim'],
    ]);
  });

  it('reduces the heap first only after heapReduceAfter notifications since the last time', () => {
    const { clock, calls, trimmer } = setup({ heapReduceAfter: 1_000 });
    trimmer.activity(600);
    clock.advance(1_000); // 600 so far: a trim only
    trimmer.activity(300);
    trimmer.activity(100);
    clock.advance(1_000); // 1,000: the heap, then a trim once its frees are done
    clock.advance(100);
    trimmer.activity(999); // the count started over
    clock.advance(1_000);
    expect(calls).toEqual([
      [1_000, 'trim'],
      [2_000, 'reduceHeap'],
      [2_100, 'trim'],
      [3_100, 'trim'],
    ]);
  });

  it('after a heap reduction, still trims for activity that came while it settled', () => {
    const { clock, calls, trimmer } = setup({ heapReduceAfter: 10 });
    trimmer.activity(10);
    clock.advance(1_000);
    clock.advance(50);
    trimmer.activity(1); // during the settle time
    clock.advance(50);
    expect(calls).toEqual([
      [1_000, 'reduceHeap'],
      [1_100, 'trim'],
    ]);
    clock.advance(1_000);
    expect(calls).toEqual([
      [1_000, 'reduceHeap'],
      [1_100, 'trim'],
      [2_100, 'trim'],
    ]);
    expect(clock.pending()).toBe(0);
  });

  it('closed while settling, it does not trim', () => {
    const { clock, calls, trimmer } = setup({ heapReduceAfter: 1 });
    trimmer.activity(1);
    clock.advance(1_000);
    trimmer.close();
    clock.advance(1_000);
    expect(calls).toEqual([[1_000, 'reduceHeap']]);
  });

  it('keeps one timer however busy the session is', () => {
    const { clock, calls, trimmer } = setup();
    for (let i = 0; i < 1_000; i++) {
      trimmer.activity(16);
      clock.advance(10);
    }
    expect(clock.pending()).toBe(1);
    expect(calls).toEqual([]);
    clock.advance(1_000);
    expect(calls).toEqual([[10_990, 'trim']]);
  });

  it('does nothing once closed', () => {
    const { clock, calls, trimmer } = setup();
    trimmer.activity(1);
    trimmer.close();
    trimmer.activity(1);
    clock.advance(5_000);
    expect(calls).toEqual([]);
    expect(clock.pending()).toBe(0);
  });
});
