import type { AgentConfig } from '../../../../src/generated';
import type { AllocationSite } from '../../../../src/agent/resources/allocation';

/** A valid agent config; `over` replaces its fields. */
export function agentConfig(over: Partial<AgentConfig> = {}): AgentConfig {
  return {
    session: 's',
    pilot: 'p',
    sandbox: '/tmp/p',
    sessionDir: '/tmp/s',
    cores: 2,
    gpus: 0,
    runtimeMin: 10,
    addresses: {
      agentInput: 'tcp://10.0.0.1:1',
      managerOutput: 'tcp://10.0.0.1:2',
      controlUp: 'tcp://10.0.0.1:3',
      controlDown: 'tcp://10.0.0.1:4',
    },
    ...over,
  };
}

/** Where an agent runs, recorded: host `box` with 8 GiB, the environment given. */
export function site(over: Partial<AgentConfig> = {}, env: NodeJS.ProcessEnv = {}): AllocationSite {
  return { cfg: agentConfig(over), env, hostname: 'box', memMb: 8192 };
}
