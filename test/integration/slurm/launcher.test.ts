import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PilotManager } from '../../../src/client/pilot-manager';
import { Session } from '../../../src/client/session';
import { TaskManager } from '../../../src/client/task-manager';
import type { PilotDescription } from '../../../src/generated';
import {
  describeSlurm,
  slurmCommand,
  slurmEnv,
  waitForJobEnd,
  type SlurmEnv,
} from '../../support/slurm';

// Real Slurm (the lab cluster of scripts/slurm-up.sh, 2 nodes of 2 CPUs), real agents inside
// real batch jobs: the agent is the built one (dist/src/agent/main.js): run `npm run build`
// first. The agent forks tasks on its own node only until the srun launch method lands, so the
// pilots here hold one node and the tasks are single-rank.

const CPUS_PER_NODE = Number(process.env.PILOTFISH_SLURM_CPUS_PER_NODE || 2);

interface Fx {
  dir: string;
  session: Session;
  pmgr: PilotManager;
  tmgr: TaskManager;
}

describeSlurm('Slurm pilots: sbatch, scontrol, scancel', () => {
  let slurm: SlurmEnv;
  let savedConf: string | undefined;
  let fx: Fx | undefined;

  beforeAll(() => {
    const env = slurmEnv();
    if (env === undefined) throw new Error('describeSlurm ran without a cluster');
    slurm = env;
    // the launcher runs sbatch/scontrol/scancel with our environment, as a user's script would
    savedConf = process.env.SLURM_CONF;
    process.env.SLURM_CONF = slurm.SLURM_CONF;
  });

  afterAll(() => {
    if (savedConf === undefined) delete process.env.SLURM_CONF;
    else process.env.SLURM_CONF = savedConf;
  });

  afterEach(async () => {
    // closing the session cancels live pilots and waits until their jobs have ended
    await fx?.session.close();
    if (fx !== undefined) rmSync(fx.dir, { recursive: true, force: true });
    fx = undefined;
  });

  async function open(): Promise<Fx> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-it-slurm-'));
    const session = await Session.open({ dir });
    const pmgr = new PilotManager(session, { shutdownGraceMs: 5_000 });
    const tmgr = new TaskManager(session);
    fx = { dir, session, pmgr, tmgr };
    return fx;
  }

  const ONE_NODE: PilotDescription = {
    resource: 'slurm',
    nodes: 1,
    runtimeMin: 5,
    launcher: { pollMs: 200 },
  };

  /** The Slurm job whose working directory is the pilot's sandbox. */
  async function jobOf(sandbox: string): Promise<string> {
    const out = await slurmCommand(slurm, 'squeue', ['--noheader', '--format=%i %Z']);
    const hit = out
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .find((r) => r[1] === sandbox);
    if (hit === undefined) throw new Error(`no job runs in ${sandbox}:\n${out}`);
    return hit[0]!;
  }

  it('a 1-node pilot becomes ACTIVE from inside its job and runs 20 /bin/true tasks', async () => {
    const { pmgr, tmgr, session } = await open();
    const states: string[] = [];
    pmgr.onState((_p, s) => states.push(s));
    const t0 = Date.now();
    const [pilot] = await pmgr.submitPilots([ONE_NODE]);
    tmgr.addPilots([pilot!]);
    await pmgr.waitPilots({
      states: ['PMGR_ACTIVE', 'DONE', 'FAILED', 'CANCELED'],
      timeoutMs: 60_000,
    });
    const activeMs = Date.now() - t0;
    expect({ state: pilot!.state, reason: pilot!.reason }).toEqual({
      state: 'PMGR_ACTIVE',
      reason: undefined,
    });
    console.log(`slurm pilot: submitPilots → PMGR_ACTIVE in ${activeMs} ms`);
    // a whole node of the lab, its CPUs as sinfo says
    expect([pilot!.cores, pilot!.gpus]).toEqual([CPUS_PER_NODE, 0]);
    const jobId = await jobOf(pilot!.sandbox);

    const tasks = await tmgr.submitTasks([
      ...Array.from({ length: 20 }, () => ({ executable: '/bin/true' })),
      { executable: '/bin/sh', arguments: ['-c', 'echo "$SLURM_JOB_ID $(hostname)"'] },
    ]);
    await tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(tasks.map((t) => t.state)).toEqual(tasks.map(() => 'DONE'));
    // the tasks ran inside the pilot's job, on one of the lab's fake nodes
    expect(tasks[20]!.stdout).toMatch(new RegExp(`^${jobId} n[0-9]+\\n$`));

    await session.close();
    expect(states).toEqual([
      'NEW',
      'PMGR_LAUNCHING_PENDING',
      'PMGR_LAUNCHING',
      'PMGR_ACTIVE_PENDING',
      'PMGR_ACTIVE',
      'DONE', // ended by its session's close
    ]);
    // the pilot ends only once the job has: nothing is left in the queue
    expect(await waitForJobEnd(slurm, jobId, 1_000)).toMatchObject({ state: 'COMPLETED' });
  }, 120_000);

  it('a job cancelled from outside (scancel) cancels the pilot, naming the job; its tasks end', async () => {
    const { pmgr, tmgr } = await open();
    const [pilot] = await pmgr.submitPilots([ONE_NODE]);
    tmgr.addPilots([pilot!]);
    await pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
    const jobId = await jobOf(pilot!.sandbox);
    // 2 run on the node's 2 cores, 1 waits in the agent's scheduler
    let executing = 0;
    const twoRun = new Promise<void>((resolve) =>
      tmgr.onState((_t, s) => {
        if (s === 'AGENT_EXECUTING' && ++executing === 2) resolve();
      }),
    );
    const tasks = await tmgr.submitTasks(
      Array.from({ length: 3 }, () => ({ executable: '/bin/sleep', arguments: ['60'] })),
    );
    await twoRun;

    // from outside, as a user or an admin would (child_process execFile)
    await slurmCommand(slurm, 'scancel', [jobId]);
    await pmgr.waitPilots({ timeoutMs: 30_000 });
    expect(pilot!.state).toBe('CANCELED');
    expect(pilot!.reason).toMatchObject({
      code: 'E_JOB_CANCELED',
      message: `job ${jobId} was cancelled (scancel)`,
    });
    await tmgr.waitTasks({ timeoutMs: 15_000 });
    expect(tasks.map((t) => t.state)).toEqual(['CANCELED', 'CANCELED', 'CANCELED']);
    expect((await waitForJobEnd(slurm, jobId, 1_000)).state).toBe('CANCELLED');
  }, 120_000);

  it('a pilot asking more nodes than the cluster has fails with Slurm’s own words', async () => {
    const { pmgr } = await open();
    const listed = await slurmCommand(slurm, 'sinfo', ['--noheader', '--Node', '--format=%N']);
    const nodes = new Set(listed.trim().split('\n')).size;
    const config = await slurmCommand(slurm, 'scontrol', ['show', 'config']);
    const enforced = !/^EnforcePartLimits\s*=\s*NO\b/m.test(config);
    const [pilot] = await pmgr.submitPilots([{ ...ONE_NODE, nodes: nodes + 1 }]);
    await pmgr.waitPilots({ timeoutMs: 30_000 });
    expect(pilot!.state).toBe('FAILED');
    if (enforced) {
      // EnforcePartLimits: sbatch refuses the job; the reason is sbatch's stderr, verbatim,
      // the same as sbatch prints for the pilot's job.sh given again
      const again = await new Promise<{ out: string; err: string }>((resolve) =>
        execFile(
          'sbatch',
          ['--parsable', 'job.sh'],
          { cwd: pilot!.sandbox, env: { ...process.env, ...slurm } },
          (_e, out, err) => resolve({ out: out.trim(), err: err.trim() }),
        ),
      );
      if (again.out !== '') await slurmCommand(slurm, 'scancel', [again.out]); // not expected
      expect(again.out).toBe('');
      const said = again.err;
      expect(said).toMatch(/^sbatch: error: Batch job submission failed: /);
      expect(pilot!.reason).toMatchObject({
        code: 'E_LAUNCH',
        message: `cannot start the agent: ${said}`,
      });
    } else {
      // no enforcement: the job pends forever; the launcher fails the pilot with Slurm's
      // reason and takes the job out of the queue
      expect(pilot!.reason?.code).toBe('E_JOB_FAILED');
      expect(pilot!.reason?.message).toMatch(
        /^job \d+ can never start: Slurm keeps it PENDING with Reason=Partition(NodeLimit|Config)$/,
      );
      const jobId = /^job (\d+)/.exec(pilot!.reason!.message)![1]!;
      expect((await waitForJobEnd(slurm, jobId, 5_000)).state).toBe('CANCELLED');
    }
    expect(readFileSync(path.join(pilot!.sandbox, 'job.sh'), 'utf8')).toContain(
      `#SBATCH --nodes=${nodes + 1}\n`,
    );
  }, 60_000);
});
