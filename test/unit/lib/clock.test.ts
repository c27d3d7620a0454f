import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { MAX_TIMER_MS, systemClock } from '../../../src/lib/clock';

describe('systemClock.setTimeout', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('waits a delay longer than Node allows (a 30-day runtime limit) instead of firing at once', async () => {
    const fired = jest.fn();
    const thirtyDays = 30 * 24 * 3_600_000;
    expect(thirtyDays).toBeGreaterThan(MAX_TIMER_MS);
    systemClock.setTimeout(fired, thirtyDays);
    await jest.advanceTimersByTimeAsync(1);
    expect(fired).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(MAX_TIMER_MS);
    expect(fired).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(thirtyDays - MAX_TIMER_MS - 2);
    expect(fired).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('fires a short delay once, and never after cancel, even across a re-arm', async () => {
    const short = jest.fn();
    systemClock.setTimeout(short, 10);
    await jest.advanceTimersByTimeAsync(10);
    expect(short).toHaveBeenCalledTimes(1);
    const long = jest.fn();
    const t = systemClock.setTimeout(long, MAX_TIMER_MS + 5_000);
    await jest.advanceTimersByTimeAsync(MAX_TIMER_MS + 1);
    t.cancel();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(long).not.toHaveBeenCalled();
  });
});
