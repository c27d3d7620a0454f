import { afterEach, describe, expect, it } from '@jest/globals';
import type { ControlMessage } from '../../../src/generated';
import { withTimeout } from '../../../src/lib/deferred';
import { silentLogger, type Logger } from '../../../src/lib/logger';
import { Bridge } from '../../../src/transport/bridge';
import { ControlBus } from '../../../src/transport/control-bus';

/** A logger that hands each warning to `onWarn` (the bus reports drops as warnings). */
function warnings(onWarn: (message: string, meta?: Record<string, unknown>) => void): Logger {
  return { ...silentLogger, warn: onWarn, child: () => warnings(onWarn) };
}

describe('ControlBus', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  it('stamps its session on what it publishes and drops what another session publishes', async () => {
    const bridge = await Bridge.pubsub();
    closers.push(() => bridge.close());
    let dropped: Record<string, unknown> | undefined;
    let droppedNow = (): void => undefined;
    const droppedSeen = new Promise<void>((resolve) => (droppedNow = resolve));
    const watcher = new ControlBus(
      bridge.endpoints,
      'session-a',
      warnings((_message, meta) => {
        dropped = meta;
        droppedNow();
      }),
    );
    closers.push(() => watcher.close());
    const ours = new ControlBus(bridge.endpoints, 'session-a', silentLogger);
    // an orphaned agent of a dead session, connected to the ports our session now binds
    const theirs = new ControlBus(bridge.endpoints, 'session-b', silentLogger);
    closers.push(
      () => ours.close(),
      () => theirs.close(),
    );
    await Promise.all([watcher.ready(), ours.ready(), theirs.ready()]);
    const got: ControlMessage[] = [];
    const oursArrived = new Promise<void>((resolve) =>
      watcher.on((m) => {
        got.push(m);
        if (m.type === 'shutdown_agent') resolve();
      }),
    );
    await theirs.publish({ type: 'shutdown_agent', pilot: 'pilot.0000', final: 'CANCELED' });
    await withTimeout(droppedSeen, 5_000, 'the foreign message dropped');
    await ours.publish({ type: 'shutdown_agent', pilot: 'pilot.0000', final: 'DONE' });
    await withTimeout(oursArrived, 5_000, 'our own message');
    expect(got).toEqual([
      { type: 'shutdown_agent', pilot: 'pilot.0000', final: 'DONE', session: 'session-a' },
    ]);
    expect(dropped).toMatchObject({ type: 'shutdown_agent', session: 'session-b', dropped: 1 });
  }, 20_000);

  it('rejects a waiting ready() at once when closed, instead of at its timeout', async () => {
    const bridge = await Bridge.pubsub();
    const endpoints = bridge.endpoints;
    await bridge.close(); // nobody forwards: the probe can never come back
    const bus = new ControlBus(endpoints, 'session-a', silentLogger);
    const ready = bus.ready(60_000);
    await bus.close();
    await expect(ready).rejects.toThrow(/control bus closed/);
  }, 20_000);
});
