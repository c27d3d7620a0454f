import { describe, expect, it, jest } from '@jest/globals';
import { TimeoutError } from '../../../../src/errors';
import { Waiters } from '../../../../src/client/calls/waiters';

type S = 'RUNNING' | 'DONE' | 'FAILED';
const FINAL: ReadonlySet<S> = new Set<S>(['DONE', 'FAILED']);

/** A Waiters over a state table the test sets, as a manager's tasks would be. */
function harness() {
  const states = new Map<string, S>();
  const waiters = new Waiters<S>();
  const set = (uid: string, s: S): void => {
    states.set(uid, s);
    waiters.update(uid, s);
  };
  const wait = (uids: string[], timeoutMs?: number): Promise<void> =>
    waiters.wait(uids, FINAL, (u) => states.get(u), timeoutMs, 'waitTasks');
  return { waiters, set, wait };
}

/** Whether a promise has settled by now (after the microtasks queued before the call). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await Promise.resolve();
  await Promise.resolve();
  return done;
}

describe('Waiters', () => {
  it('resolves a wait once each of its uids reached a wanted state, not before', async () => {
    const { set, wait } = harness();
    set('a', 'RUNNING');
    const both = wait(['a', 'b']);
    set('a', 'DONE');
    set('b', 'RUNNING');
    expect(await settled(both)).toBe(false);
    set('b', 'FAILED');
    await expect(both).resolves.toBeUndefined();
  });

  it('resolves at once when every uid is already there', async () => {
    const { set, wait } = harness();
    set('a', 'DONE');
    await expect(wait(['a'])).resolves.toBeUndefined();
  });

  it('keeps waits on the same uid apart, and one wait on many uids', async () => {
    const { set, wait } = harness();
    const first = wait(['a']);
    const second = wait(['a', 'b']);
    const other = wait(['c']);
    set('a', 'DONE');
    await expect(first).resolves.toBeUndefined();
    expect(await settled(second)).toBe(false);
    set('b', 'DONE');
    await expect(second).resolves.toBeUndefined();
    expect(await settled(other)).toBe(false);
  });

  it('times out naming what is still missing, and a later state touches nothing', async () => {
    jest.useFakeTimers();
    try {
      const { set, wait } = harness();
      set('b', 'RUNNING');
      const w = wait(['a', 'b'], 1_000);
      set('a', 'DONE');
      const refused = expect(w).rejects.toThrow(
        new TimeoutError('waitTasks: 1 still not there after 1000 ms: b (RUNNING)'),
      );
      await jest.advanceTimersByTimeAsync(999);
      expect(await settled(w)).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      await refused;
      set('b', 'DONE'); // its waiter is gone: nothing to resolve twice
    } finally {
      jest.useRealTimers();
    }
  });

  it('rejects every wait once with rejectAll, a wait on several uids included', async () => {
    const { waiters, set, wait } = harness();
    const a = wait(['a', 'b']);
    const b = wait(['b']);
    const boom = new Error('closed');
    waiters.rejectAll(boom);
    await expect(a).rejects.toBe(boom);
    await expect(b).rejects.toBe(boom);
    set('b', 'DONE');
  });

  it('serves 20,000 waits of one uid each through 16 states apiece without visiting them all', async () => {
    const { set, wait } = harness();
    const uids = Array.from({ length: 20_000 }, (_, i) => `t${i}`);
    const waits = uids.map((u) => wait([u]));
    const t0 = process.hrtime.bigint();
    for (let step = 0; step < 15; step++) for (const u of uids) set(u, 'RUNNING');
    for (const u of uids) set(u, 'DONE');
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    await Promise.all(waits);
    // ~30 ms here; visiting every waiter per state would be 6.4e9 steps (minutes)
    expect(ms).toBeLessThan(2_000);
  });
});
