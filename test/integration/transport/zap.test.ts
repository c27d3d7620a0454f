import { describe, expect, it } from '@jest/globals';
import * as zmq from 'zeromq';
import { silentLogger } from '../../../src/lib/logger';
import { clientOptions, newKeyPair, serverOptions } from '../../../src/transport/curve';
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

  // the handler is released while the ZAP pipes of CURVE sockets closed just before are torn
  // down, a refused handshake in flight: nothing may abort (unbinding the address first did)
  it('is released and bound again right after CURVE sockets that used it closed', async () => {
    for (let i = 0; i < 20; i++) {
      const zap = await ZapHandler.shared();
      const server = newKeyPair();
      const client = newKeyPair();
      zap.admit('zap-test', 'peer', client.publicKey, silentLogger);
      const pull = new zmq.Pull({
        linger: 0,
        ...serverOptions({ secretKey: server.secretKey, domain: 'zap-test' }),
      });
      await pull.bind('tcp://127.0.0.1:*');
      const push = new zmq.Push({
        linger: 0,
        ...clientOptions({ serverKey: server.publicKey, ...client }),
      });
      push.connect(pull.lastEndpoint!);
      // and a peer whose key was not issued, whose handshakes it keeps refusing
      const intruder = new zmq.Push({
        linger: 0,
        reconnectInterval: 1,
        ...clientOptions({ serverKey: server.publicKey, ...newKeyPair() }),
      });
      intruder.connect(pull.lastEndpoint!);
      await push.send('admitted');
      const [msg] = await pull.receive();
      expect(msg!.toString()).toBe('admitted');
      push.close();
      pull.close();
      await zap.release(['zap-test']);
      intruder.close();
    }
  });
});
