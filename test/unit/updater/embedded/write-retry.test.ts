import { describe, expect, it } from '@jest/globals';
import { silentLogger } from '../../../../src/lib/logger';
import type { StoreUnwritableError } from '../../../../src/updater';
import { WriteRetry } from '../../../../src/updater/embedded/write-retry';
import { FakeClock } from '../../../support/fake-clock';

const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), {
  code: 'ENOSPC',
});

/** Resolves `pause()` by advancing the clock, and says after how many ms it ended. */
async function pauseLength(retry: WriteRetry, clock: FakeClock): Promise<number> {
  let ended = false;
  const p = retry.pause().then(() => (ended = true));
  let waited = 0;
  while (!ended) {
    clock.advance(1);
    waited++;
    await Promise.resolve();
  }
  await p;
  return waited;
}

describe('WriteRetry', () => {
  it('tells listeners once as the condition begins and once as it ends', () => {
    const clock = new FakeClock();
    const retry = new WriteRetry(clock, 50, 1_000, silentLogger);
    const told: (StoreUnwritableError | undefined)[] = [];
    retry.onChange((e) => told.push(e));
    retry.failed(enospc, '/s/store.log', 10);
    clock.advance(300);
    retry.failed(enospc, '/s/store.log', 40); // the same condition again: said once
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({
      code: 'E_STORE_UNWRITABLE',
      errno: 'ENOSPC',
      path: '/s/store.log',
      since: clock.now() - 300,
      held: 10,
    });
    expect(retry.error(40)).toMatchObject({ held: 40, since: clock.now() - 300 });
    retry.succeeded(40);
    retry.succeeded(0); // nothing to end
    expect(told).toEqual([told[0], undefined]);
    expect(retry.failing).toBe(false);
    expect(retry.error(0)).toBeUndefined();
  });

  it('tells again when the errno or the file changes', () => {
    const retry = new WriteRetry(new FakeClock(), 50, 1_000, silentLogger);
    const told: (string | undefined)[] = [];
    retry.onChange((e) => told.push(e && `${e.errno} ${e.path}`));
    retry.failed(enospc, '/s/store.log', 1);
    retry.failed(Object.assign(new Error('quota'), { code: 'EDQUOT' }), '/s/store.log', 1);
    retry.failed(new Error('no code'), '/s/store.1.log', 1);
    expect(told).toEqual(['ENOSPC /s/store.log', 'EDQUOT /s/store.log', 'EIO /s/store.1.log']);
  });

  it('waits twice as long after each failed try, up to the maximum, and from the start after a success', async () => {
    const clock = new FakeClock();
    const retry = new WriteRetry(clock, 50, 300, silentLogger);
    const lengths: number[] = [];
    for (let i = 0; i < 5; i++) lengths.push(await pauseLength(retry, clock));
    expect(lengths).toEqual([50, 100, 200, 300, 300]);
    retry.succeeded(0);
    expect(await pauseLength(retry, clock)).toBe(50);
  });

  it('ends a pause at once when woken (a closing store tries one last time)', async () => {
    const clock = new FakeClock();
    const retry = new WriteRetry(clock, 50, 300, silentLogger);
    let ended = false;
    const p = retry.pause().then(() => (ended = true));
    retry.wake();
    await p;
    expect(ended).toBe(true);
    clock.advance(1_000); // the cancelled timer does nothing
  });

  it('keeps telling the other listeners when one throws', () => {
    const retry = new WriteRetry(new FakeClock(), 50, 300, silentLogger);
    const told: unknown[] = [];
    retry.onChange(() => {
      throw new Error('listener bug');
    });
    retry.onChange((e) => told.push(e));
    retry.failed(enospc, '/s/store.log', 1);
    expect(told).toHaveLength(1);
  });
});
