import { describe, expect, it } from '@jest/globals';
import { getHeapStatistics } from 'node:v8';
import { withSimulationHeap } from '../../../src/simulator/heap';

describe('withSimulationHeap', () => {
  it('returns what the simulation returns, and passes on what it throws', () => {
    expect(withSimulationHeap(() => 42)).toBe(42);
    expect(() =>
      withSimulationHeap(() => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    // the process goes on with a working heap
    expect(getHeapStatistics().heap_size_limit).toBeGreaterThan(0);
  });
});
