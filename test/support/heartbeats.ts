import type { ControlBus } from '../../src/transport/control-bus';

/** Publishes a session's heartbeats every `ms` until stopped (what a live client does). */
export function beat(bus: ControlBus, session: string, ms: number): { stop(): void } {
  const t = setInterval(() => void bus.publish({ type: 'heartbeat', session, ts: Date.now() }), ms);
  return { stop: () => clearInterval(t) };
}
