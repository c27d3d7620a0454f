import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PilotManager } from '../../../src/client/pilot-manager';
import { Session } from '../../../src/client/session';

describe('batch pilots without a launcher on this machine', () => {
  let dir: string | undefined;
  let session: Session | undefined;
  afterEach(async () => {
    await session?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    session = undefined;
    dir = undefined;
  });

  it.each([
    ['pbs', 'PBS'],
    ['lsf', 'LSF'],
  ] as const)('fails a %s pilot at once with E_UNSUPPORTED', async (resource, system) => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'pf-it-batch-'));
    session = await Session.open({ dir });
    const pmgr = new PilotManager(session);
    const states: string[] = [];
    pmgr.onState((_p, s) => states.push(s));
    const [pilot] = await pmgr.submitPilots([{ resource, nodes: 2, cores: 8, gpus: 1 }]);
    expect([pilot!.cores, pilot!.gpus]).toEqual([16, 2]);
    await pmgr.waitPilots({ timeoutMs: 5_000 });
    expect(states).toEqual(['NEW', 'PMGR_LAUNCHING_PENDING', 'PMGR_LAUNCHING', 'FAILED']);
    expect(pilot!.reason).toEqual({
      code: 'E_UNSUPPORTED',
      message: `cannot start the agent: no ${system} launcher on this machine: pilotfish renders ${system} job scripts (src/components/pilot-launcher/batch/${resource}.ts) but submits only to Slurm; use resource 'slurm' or 'local'`,
      component: 'PilotLauncher',
    });
  });
});
