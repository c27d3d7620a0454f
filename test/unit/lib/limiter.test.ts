import { describe, expect, it } from '@jest/globals';
import { Limiter } from '../../../src/lib/limiter';
import { deferred } from '../../../src/lib/deferred';

describe('Limiter', () => {
  it('runs at most its limit at once, the rest in order as slots free', async () => {
    const limiter = new Limiter(2);
    const gates = [0, 1, 2, 3].map(() => deferred<void>());
    const starts = [0, 1, 2, 3].map(() => deferred<void>());
    const started: number[] = [];
    const runs = gates.map((g, i) =>
      limiter.run(async () => {
        started.push(i);
        starts[i]!.resolve();
        await g.promise;
        return i;
      }),
    );
    await Promise.all([starts[0]!.promise, starts[1]!.promise]);
    expect(started).toEqual([0, 1]);
    gates[1]!.resolve();
    await starts[2]!.promise;
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.resolve();
    gates[2]!.resolve();
    gates[3]!.resolve();
    await expect(Promise.all(runs)).resolves.toEqual([0, 1, 2, 3]);
  });

  it('frees the slot of a job that rejects', async () => {
    const limiter = new Limiter(1);
    await expect(limiter.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limiter.run(() => Promise.resolve('next'))).resolves.toBe('next');
  });

  it('refuses a limit below 1', () => {
    expect(() => new Limiter(0)).toThrow(RangeError);
  });
});
