import type { AgentConfig, PilotDescription } from '../../generated';
import { batchCapacity } from './batch/common';
import type { Capacity, LaunchEvents, PilotLauncher } from './launcher';
import type { PilotRecord } from './pilot-record';

/**
 * A batch system whose job scripts pilotfish renders (batch/<resource>.ts, unit-tested) but
 * cannot submit: no server to test a submitter against exists here. Its pilots are sized as
 * any batch pilot and fail at once with E_UNSUPPORTED; a real launcher for the system
 * replaces its line in registry.ts.
 */
export class ScriptOnlyLauncher implements PilotLauncher {
  constructor(
    private readonly events: LaunchEvents,
    private readonly system: { resource: string; name: string },
  ) {}

  /** No batch system to ask how big a node is: `cores` per node, else 1. */
  capacities(descriptions: PilotDescription[]): Promise<Capacity[]> {
    return Promise.resolve(descriptions.map((d) => batchCapacity(d, undefined)));
  }

  agentConfig(_pilot: PilotRecord, common: AgentConfig): AgentConfig {
    return common;
  }

  launch(pilot: PilotRecord, _config: AgentConfig): void {
    const { resource, name } = this.system;
    // later, as every launch outcome: the core is launching a bulk when it calls launch
    queueMicrotask(() =>
      this.events.launchFailed(pilot.uid, {
        code: 'E_UNSUPPORTED',
        message: `no ${name} launcher on this machine: pilotfish renders ${name} job scripts (src/components/pilot-launcher/batch/${resource}.ts) but submits only to Slurm; use resource 'slurm' or 'local'`,
      }),
    );
  }

  /** Nothing was started. */
  kill(): void {}

  /** Nothing was started, so nothing can be adopted: the core failed the pilot. */
  adopt(): void {}

  close(): void {}
}
