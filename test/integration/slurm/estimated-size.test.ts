import { afterAll, afterEach, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PilotManager } from '../../../src/client/pilot-manager';
import { Session } from '../../../src/client/session';
import { TaskManager } from '../../../src/client/task-manager';
import { agentTrace } from '../../support/client-child';
import { describeSlurm, slurmEnv } from '../../support/slurm';

/**
 * No final verdict on a guess: where sinfo cannot say how many CPUs a node has, a pilot's size
 * is estimated (1 core per node) until its agent reports the real one. A task that fits only
 * the real size waits for it rather than failing E_NEVER_FITS on the estimate.
 */
describeSlurm('a 2-node Slurm pilot whose size sinfo cannot tell', () => {
  const saved = process.env.PATH;
  const fakes = mkdtempSync(path.join(os.tmpdir(), 'pf-no-sinfo-'));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-slurm-guess-'));
  let session: Session | undefined;
  // the session closes before its directory goes (a session whose directory is removed under
  // it cannot write its journal, and its close waits)
  afterEach(async () => {
    await session?.close();
    session = undefined;
    process.env.PATH = saved;
  }, 60_000);
  afterAll(() => {
    rmSync(fakes, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes a task asking 2 ranks x 2 cores before it is up, and runs it on both nodes once it is', async () => {
    Object.assign(process.env, slurmEnv());
    // a sinfo that fails (unreachable controller), first on PATH; sbatch and squeue still work
    writeFileSync(path.join(fakes, 'sinfo'), '#!/bin/sh\necho "sinfo: unreachable" >&2\nexit 1\n');
    chmodSync(path.join(fakes, 'sinfo'), 0o755);
    process.env.PATH = `${fakes}:${saved}`;
    session = await Session.open({ dir });
    const pmgr = new PilotManager(session, { shutdownGraceMs: 5_000 });
    const tmgr = new TaskManager(session);
    const [pilot] = await pmgr.submitPilots([
      // queued until released: the task surely comes first
      { resource: 'slurm', nodes: 2, runtimeMin: 5, directives: ['--hold'] },
    ]);
    tmgr.addPilots([pilot!]);
    const fx = { session, pmgr, tmgr, pilot: pilot! };
    expect(fx.pilot.cores).toBe(2); // the estimate: 1 core per node
    const [wide] = await fx.tmgr.submitTasks([
      {
        ranks: 2,
        coresPerRank: 2,
        executable: '/bin/sh',
        arguments: ['-c', 'echo "rank=$PF_RANK on $(hostname)"'],
      },
    ]);
    await fx.pmgr.waitPilots({ states: ['PMGR_ACTIVE_PENDING'], timeoutMs: 30_000 });
    await fx.tmgr.waitTasks({ uids: [wide!.uid], states: ['TMGR_SCHEDULING'], timeoutMs: 10_000 });
    expect(fx.tmgr.explain(wide!.uid).waiting?.message).toContain(
      'is known once its agent reports: estimated 2 cores, 0 GPUs',
    );
    const env = { ...process.env, ...slurmEnv() };
    execFileSync('scontrol', ['release', agentTrace(fx.session.dir, fx.pilot.uid).jobId!], { env });
    await fx.tmgr.waitTasks({ timeoutMs: 60_000 });
    expect([wide!.state, wide!.reason]).toEqual(['DONE', undefined]);
    expect(fx.pilot.cores).toBe(4); // what the agent reported
    const hosts = (wide!.stdout ?? '')
      .trim()
      .split('\n')
      .map((l) => /on (\S+)$/.exec(l)?.[1]);
    // both nodes of the pilot (the lab has more: which two depends on what else runs)
    const held = fx.pilot.nodes.map((n) => n.name);
    expect(held).toHaveLength(2);
    expect(new Set(hosts)).toEqual(new Set(held));
  }, 90_000);
});
