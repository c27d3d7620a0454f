import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import { endedIn, tempDirs } from '../../support/temp-dirs';
import { fixtures } from '../../support/session-fixture';

/**
 * `task://<uid>/` names another task's sandbox: the ManagerInputStager resolves it through the
 * session's task registry (the StagingLookup the runtime gives the ManagerPipeline).
 */
describe("staging through another task's sandbox (task://<uid>/)", () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-client-');
  function clientDir(): string {
    const d = temp.make();
    return d;
  }

  it('fails a task naming a task that never ran in TMGR_STAGING_INPUT', async () => {
    const fx = await fixture.open();
    const [never] = await fx.tmgr.submitTasks([{ executable: '/bin/true', coresPerRank: 64 }]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(never!.reason?.code).toBe('E_NEVER_FITS');
    const [t] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/true',
        inputStaging: [{ source: `task://${never!.uid}/out.txt`, target: 'task://' }],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(t!.state).toBe('FAILED');
    expect(endedIn(t!, 'TMGR_STAGING_INPUT')).toBe(true);
    expect(t!.reason).toMatchObject({
      code: 'E_STAGING',
      component: 'ManagerInputStager',
      message: `inputStaging[0]: 'task://${never!.uid}/out.txt': task ${never!.uid} has no sandbox yet (it has not run)`,
    });
  }, 40_000);

  it('passes a file from one task to the next through task://<uid>/', async () => {
    const fx = await fixture.open();
    const client = clientDir();
    const [first] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'echo 21 > out.txt'] },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(first!.state).toBe('DONE');
    const [second] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', 'echo $(( $(cat in.txt) * 2 )) > doubled.txt'],
        inputStaging: [{ source: `task://${first!.uid}/out.txt`, target: 'task://in.txt' }],
        outputStaging: [{ source: 'task://doubled.txt', target: `client://${client}/` }],
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(second!.reason).toBeUndefined();
    expect(second!.state).toBe('DONE');
    expect(fs.readFileSync(`${client}/doubled.txt`, 'utf8')).toBe('42\n');
  }, 40_000);
});
