import type { OutgoingControl } from '../transport/control-bus';
import { agentStartup } from './startup-phases';

/**
 * What an agent tells its client when it is up (and again to a client that resumed): the
 * nodes it holds, what it found wrong, when it drains (whole ms from now, once its time runs),
 * which start of the pilot's agent it is (agent.restarts) and how its start went.
 */
export function agentReady(
  pilot: string,
  nodes: readonly { name: string; cores: number; gpus: number }[],
  warnings: readonly string[],
  at: { restart: number; drainInMs: number | undefined },
): Extract<OutgoingControl, { type: 'agent_ready' }> {
  agentStartup.mark('ready');
  return {
    type: 'agent_ready',
    pilot,
    nodes: nodes.map((n) => ({ name: n.name, cores: n.cores, gpus: n.gpus })),
    startupMs: agentStartup.ms,
    ...(at.restart > 0 ? { restarts: at.restart } : {}),
    ...(at.drainInMs !== undefined ? { drainInMs: Math.round(at.drainInMs) } : {}),
    ...(warnings.length > 0 ? { warnings: [...warnings] } : {}),
  };
}
