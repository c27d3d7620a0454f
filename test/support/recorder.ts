import { expect } from '@jest/globals';

/**
 * Records effects a decision core asks for, as readable strings, and checks that a test
 * asserted all of them (HyperQueue's emptiness check).
 */
export class EffectRecorder {
  private calls: string[] = [];

  record(call: string): void {
    this.calls.push(call);
  }

  /** Returns and removes everything recorded so far. */
  take(): string[] {
    const out = this.calls;
    this.calls = [];
    return out;
  }

  expectNoMore(): void {
    expect(this.calls).toEqual([]);
  }
}
