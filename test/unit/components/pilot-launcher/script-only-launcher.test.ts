import { describe, expect, it } from '@jest/globals';
import type { LaunchEvents } from '../../../../src/components/pilot-launcher/launcher';
import { ScriptOnlyLauncher } from '../../../../src/components/pilot-launcher/script-only-launcher';
import type { AgentConfig } from '../../../../src/generated';
import { pilotIn } from '../../../support/fixtures';

function recorder(): { events: LaunchEvents; calls: unknown[] } {
  const calls: unknown[] = [];
  const events: LaunchEvents = {
    launched: (uid, trace) => calls.push(['launched', uid, trace]),
    launchFailed: (uid, e) => calls.push(['launchFailed', uid, e]),
    jobStarted: (uid) => calls.push(['jobStarted', uid]),
    jobEnded: (uid, end) => calls.push(['jobEnded', uid, end]),
    agentExited: (uid, exit) => calls.push(['agentExited', uid, exit]),
  };
  return { events, calls };
}

describe('ScriptOnlyLauncher', () => {
  it('sizes pilots as any batch pilot: nodes × cores per node (1 unknown), nodes × gpus', async () => {
    const l = new ScriptOnlyLauncher(recorder().events, { resource: 'pbs', name: 'PBS' });
    await expect(
      l.capacities([
        { resource: 'pbs', nodes: 2, cores: 8, gpus: 1 },
        { resource: 'pbs', nodes: 3 },
        { resource: 'pbs', cores: 5, gpus: 2 },
      ]),
    ).resolves.toEqual([
      { cores: 16, gpus: 2 },
      { cores: 3, gpus: 0 },
      { cores: 5, gpus: 2 },
    ]);
  });

  it('fails a launch with E_UNSUPPORTED after the call returns, naming the renderer', async () => {
    const { events, calls } = recorder();
    const l = new ScriptOnlyLauncher(events, { resource: 'lsf', name: 'LSF' });
    const pilot = pilotIn('PMGR_LAUNCHING', { description: { resource: 'lsf' } });
    l.launch(pilot, l.agentConfig(pilot, { pilot: 'p1' } as AgentConfig));
    expect(calls).toEqual([]);
    await Promise.resolve();
    expect(calls).toEqual([
      [
        'launchFailed',
        'p1',
        {
          code: 'E_UNSUPPORTED',
          message:
            "no LSF launcher on this machine: pilotfish renders LSF job scripts (src/components/pilot-launcher/batch/lsf.ts) but submits only to Slurm; use resource 'slurm' or 'local'",
        },
      ],
    ]);
  });
});
