import { expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describeSlurm, slurmEnv } from '../../support/slurm';
import { gone } from '../../support/dir-entries';
import { fixtures } from '../../support/session-fixture';
import { collect } from '../../support/tail-check';

/** Every path under `dir`, relative to it. */
function tree(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

describeSlurm("output 'stream' on a 2-node Slurm pilot", () => {
  const fixture = fixtures();

  it('creates no file or directory per task, on either node, and gives every line back', async () => {
    Object.assign(process.env, slurmEnv());
    const fx = await fixture.open({
      resource: 'slurm',
      nodes: 2,
      runtimeMin: 5,
      agent: { output: 'stream' },
    });
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
    const sandbox = path.join(fx.session.dir, fx.pilot.uid);
    const before = tree(sandbox);
    // more tasks than the agent's node has cores: some run on the other node, under srun
    const tasks = await fx.tmgr.submitTasks(
      Array.from({ length: 12 }, (_, i) => ({
        executable: '/bin/sh',
        arguments: ['-c', `echo "task ${i} on $(hostname)"; echo "err ${i}" >&2; sleep 0.3`],
      })),
    );
    await fx.tmgr.waitTasks({ timeoutMs: 120_000 });
    const hosts = new Set<string>();
    for (const [i, t] of tasks.entries()) {
      expect([t.state, t.reason?.message, t.output]).toEqual(['DONE', undefined, 'stream']);
      expect(t.stdout).toMatch(new RegExp(`^task ${i} on \\S+\\n$`));
      expect(t.stderr).toBe(`err ${i}\n`);
      expect(await collect(fx.tmgr.tail(t.uid))).toEqual([t.stdout!.trimEnd()]);
      hosts.add(t.stdout!.split(' ').at(-1)!.trim());
    }
    expect(hosts.size).toBe(2);
    // nothing left in the pilot's sandbox (no stdout or srun hostfile; each task's own
    // directory stayed empty and was removed in the background, or kept by its helper as a
    // spare for a later task's: a few per helper, not one per task): the output went into the
    // stream files its helpers opened when the agent started
    await gone(
      tasks.map((t) => t.sandbox!),
      10_000,
    );
    const added = tree(sandbox).filter((p) => !before.includes(p));
    const spares = added.filter((p) => /^\.pf-spare-\d+-\d+$/.test(p));
    expect(added.filter((p) => !spares.includes(p))).toEqual([]);
    expect(spares.length).toBeLessThanOrEqual(fx.pilot.cores);
    expect(tree(sandbox).filter((p) => p.endsWith('.pfout')).length).toBeGreaterThan(0);
  }, 180_000);
});
