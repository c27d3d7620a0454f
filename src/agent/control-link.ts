import type { AgentConfig } from '../generated';
import type { Logger } from '../lib/logger';
import { ControlBus } from '../transport/control-bus';

/**
 * The agent's control bus, made first thing in its start, and `linked`: its probe came back
 * through the client's forwarder. The CurveZMQ handshakes and the subscription's way to the
 * forwarder take tens of ms, spent while the agent's other parts start; the bus holds what
 * comes before the agent listens. `linked` rejects only when awaited (a start that fails first
 * leaves it).
 */
export function linkControl(
  cfg: AgentConfig,
  log: Logger,
): { control: ControlBus; linked: Promise<void> } {
  const { controlUp, controlDown } = cfg.addresses;
  const control = new ControlBus(
    { in: controlUp, out: controlDown },
    cfg.session,
    log,
    cfg.curve,
    true,
  );
  const linked = control.ready();
  linked.catch(() => undefined);
  return { control, linked };
}
