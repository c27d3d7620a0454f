import { describe, expect, it } from '@jest/globals';
import { ZapHandler } from '../../../src/transport/zap';

describe('ZapHandler', () => {
  // libzmq frees an inproc address only when its closed socket is reaped, on another thread;
  // a session opened right after the last one closed must still get the handler
  it('is bound again at once after the last session released it', async () => {
    for (let i = 0; i < 200; i++) {
      const zap = await ZapHandler.shared();
      await zap.release([]);
    }
    const zap = await ZapHandler.shared();
    expect(zap).toBe(await ZapHandler.shared());
    await zap.release([]);
  });

  it('is bound by a session opened while the last one is being released', async () => {
    for (let i = 0; i < 100; i++) {
      const zap = await ZapHandler.shared();
      const [, next] = await Promise.all([zap.release([]), ZapHandler.shared()]);
      expect(next).not.toBe(zap);
      await next.release([]);
    }
  });
});
