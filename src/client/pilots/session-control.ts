import { errorMeta } from '../../errors';
import type { Clock } from '../../lib/clock';
import type { Logger } from '../../lib/logger';
import { Bridge } from '../../transport/bridge';
import { ControlBus } from '../../transport/control-bus';
import { ControlUplinks } from '../../transport/control-uplinks';
import type { SessionSecurity } from './session-security';

/** The session's control plane: what it says to every agent, and what each agent says back. */
export interface SessionControl {
  bridge: Bridge;
  bus: ControlBus;
  uplinks: ControlUplinks;
  /** Where agents subscribe (TCP). */
  down: string;
}

/**
 * Agents subscribe to the bridge's `out` on TCP (a CURVE server admitting every key the
 * session issued); only this process publishes into it, and hears its own probes on inproc.
 * Each agent speaks back on an uplink of its own (ControlUplinks, bound per pilot).
 */
export async function openSessionControl(
  uid: string,
  listenAt: string,
  before: string | undefined,
  security: SessionSecurity | undefined,
  log: Logger,
): Promise<SessionControl> {
  const own = `inproc://${uid}/control/out`;
  const bridge = await Bridge.pubsub(
    `inproc://${uid}/control/in`,
    before ?? listenAt,
    { out: security?.shared() },
    own,
  );
  const bus = new ControlBus(
    { in: bridge.endpoints.in, out: own },
    uid,
    log.child({ component: 'ControlBus' }),
  );
  const uplinks = new ControlUplinks(bus, log.child({ component: 'ControlUplinks' }));
  return { bridge, bus, uplinks, down: bridge.endpoints.out };
}

/** Agents that cannot watch the client's process (batch jobs) know it is alive from these. */
export function heartbeats(
  bus: ControlBus,
  everyMs: number,
  clock: Clock,
  log: Logger,
): NodeJS.Timeout {
  const timer = setInterval(() => {
    bus
      .publish({ type: 'heartbeat', ts: clock.now() })
      .catch((e: unknown) => log.warn('heartbeat publish failed', errorMeta(e)));
  }, everyMs);
  timer.unref();
  return timer;
}
