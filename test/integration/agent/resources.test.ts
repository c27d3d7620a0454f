import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { usableCpus } from '../../../src/agent/resources/machine';
import { fixtures } from '../../support/session-fixture';

// A real local pilot (the built agent, dist/): what it says about the machine it runs on, and
// fork tasks pinned to the CPUs of their slots.

const CPUS = usableCpus();
const SHOW =
  'a=$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status); ' +
  'echo "allowed=$a pf=${PF_CPUS-unset}"';

/** The agent log's lines with this message, parsed. */
function logged(sandbox: string, message: string): Record<string, unknown>[] {
  return fs
    .readFileSync(path.join(sandbox, 'agent.log'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.message === message);
}

describe("a local pilot and its machine's CPUs and GPUs", () => {
  const fixture = fixtures();

  it('pins each fork task to the CPU of its slot when the pilot fits the machine', async () => {
    const fx = await fixture.open({ cores: CPUS.length });
    const tasks = await fx.tmgr.submitTasks(
      CPUS.map(() => ({ executable: '/bin/sh', arguments: ['-c', SHOW] })),
    );
    await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
    for (const t of tasks) {
      expect(t.state).toBe('DONE');
      const m = /^allowed=(\S+) pf=(\S+)$/.exec((t.stdout ?? '').trim());
      expect(m).not.toBeNull();
      // pinned to one CPU of the machine, the one PF_CPUS names
      expect(m![1]).toBe(m![2]);
      expect(CPUS).toContain(Number(m![1]));
    }
    expect(logged(fx.pilot.sandbox, 'pilot resources beyond the machine')).toEqual([]);
  }, 30_000);

  it('says once that it declares more cores and GPUs than the machine has, and runs unpinned', async () => {
    const cores = CPUS.length + 2;
    const fx = await fixture.open({ cores, gpus: 64 });
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/sh', arguments: ['-c', SHOW] }]);
    await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
    expect(t!.state).toBe('DONE');
    expect(t!.stdout).toMatch(/ pf=unset\n$/);
    const warnings = logged(fx.pilot.sandbox, 'pilot resources beyond the machine');
    expect(warnings.map((w) => w.level)).toEqual(['warn', 'warn']);
    expect(warnings[0]!.warning).toContain(`the pilot declares ${cores} cores on `);
    expect(warnings[0]!.warning).toContain(`but the agent may use ${CPUS.length} CPU`);
    expect(warnings[1]!.warning).toContain('the pilot declares 64 GPUs on ');
    // the pilot runs nonetheless: oversubscribing on purpose is allowed (its PMGR_ACTIVE goes
    // through the client's own UpdateWorker: it may be delivered after the task's DONE)
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 10_000 });
    expect(fx.pilot.state).toBe('PMGR_ACTIVE');
  }, 30_000);
});
