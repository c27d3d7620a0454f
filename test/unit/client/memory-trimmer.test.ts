import { describe, expect, it } from '@jest/globals';
import { MemoryTrimmer } from '../../../src/client/memory-trimmer';
import { FakeClock } from '../../support/fake-clock';

function setup(quietMs = 1_000): { clock: FakeClock; trims: number[]; trimmer: MemoryTrimmer } {
  const clock = new FakeClock();
  const trims: number[] = [];
  const trimmer = new MemoryTrimmer(() => trims.push(clock.now()), clock, quietMs);
  return { clock, trims, trimmer };
}

describe('MemoryTrimmer', () => {
  it('trims once, quietMs after the last activity', () => {
    const { clock, trims, trimmer } = setup();
    const start = clock.now();
    trimmer.activity();
    clock.advance(600);
    trimmer.activity(); // the quiet spell starts again here
    clock.advance(999);
    expect(trims).toEqual([]);
    clock.advance(1);
    expect(trims).toEqual([start + 1_600]);
    clock.advance(10_000);
    expect(trims).toHaveLength(1);
    expect(clock.pending()).toBe(0);
  });

  it('never trims without activity, and trims again after new activity', () => {
    const { clock, trims, trimmer } = setup(500);
    clock.advance(5_000);
    expect(trims).toEqual([]);
    trimmer.activity();
    clock.advance(500);
    trimmer.activity();
    clock.advance(500);
    expect(trims).toHaveLength(2);
  });

  it('keeps one timer however busy the session is', () => {
    const { clock, trims, trimmer } = setup();
    for (let i = 0; i < 1_000; i++) {
      trimmer.activity();
      clock.advance(10);
    }
    expect(clock.pending()).toBe(1);
    expect(trims).toEqual([]);
    clock.advance(1_000);
    expect(trims).toHaveLength(1);
  });

  it('does nothing once closed', () => {
    const { clock, trims, trimmer } = setup();
    trimmer.activity();
    trimmer.close();
    trimmer.activity();
    clock.advance(5_000);
    expect(trims).toEqual([]);
    expect(clock.pending()).toBe(0);
  });
});
