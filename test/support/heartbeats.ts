import type { ControlBus } from '../../src/transport/control-bus';

/** Publishes the bus's session's heartbeats every `ms` until stopped (what a live client does). */
export function beat(bus: ControlBus, ms: number): { stop(): void } {
  const t = setInterval(() => void bus.publish({ type: 'heartbeat', ts: Date.now() }), ms);
  return { stop: () => clearInterval(t) };
}
