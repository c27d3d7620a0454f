import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { validationCounts } from '../../../src/lib/validate';
import { fixtures } from '../../support/session-fixture';

/** The schemas a task's own data (description, record) is checked against. */
const TASK_SCHEMAS = ['TaskDescription', 'TaskRecord', 'TaskBulk', 'HandBack'];

function taskChecks(
  before: Readonly<Record<string, number>>,
  after: Readonly<Record<string, number>>,
): Record<string, number> {
  return Object.fromEntries(
    TASK_SCHEMAS.map((s): [string, number] => [s, (after[s] ?? 0) - (before[s] ?? 0)]).filter(
      ([, n]) => n !== 0,
    ),
  );
}

describe('validation of one task from submitTasks to DONE', () => {
  const fixture = fixtures();

  it('happens at the API and once per process the task enters, not at every hop', async () => {
    const fx = await fixture.open({ cores: 1 });
    const before = validationCounts();
    const [task] = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
    expect(task!.state).toBe('DONE');
    // the client: its API, then the task's return from the agent, as a hand-back (the
    // pipeline's own hops hand the record over by reference)
    expect(taskChecks(before, validationCounts())).toEqual({ TaskDescription: 1, HandBack: 1 });

    // the agent: once, as the task enters it; it logs its counts as it exits
    await fx.session.close();
    const log = readFileSync(path.join(fx.session.dir, fx.pilot.uid, 'agent.log'), 'utf8');
    const exiting = log
      .split('\n')
      .filter((l) => l.includes('"agent exiting"'))
      .map((l) => JSON.parse(l) as { validations: Record<string, number> });
    expect(exiting).toHaveLength(1);
    expect(taskChecks({}, exiting[0]!.validations)).toEqual({ TaskRecord: 1 });
  }, 30_000);
});
