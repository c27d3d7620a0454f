/**
 * The srun launch method on the lab Slurm cluster (scripts/slurm-up.sh: fake nodes n1, n2, … of 2
 * CPUs, each slurmd in its own UTS namespace, so `hostname` in a rank prints its node).
 *
 * The Executor runs here, not inside a job, but as if it did: beforeAll submits a 2-node job
 * whose batch script dumps its environment and sleeps, and the spawner helpers get that job's
 * SLURM_* variables (SLURM_JOB_ID, SLURM_NNODES, SLURM_MEM_PER_NODE …), as an agent running in
 * the batch step would. The job asks `--mem`, so a step that reserved the job's memory would
 * block the next one on its node: the concurrency test fails without `--mem=0`.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  RANK_WRAPPER,
  SRUN_GRES_RANK_WRAPPER,
  SRUN_RANK_WRAPPER,
} from '../../../../src/components/executor/launch';
import type { TaskDescription, TaskRecord } from '../../../../src/generated';
import { ExecutorHarness, lines, type Slot } from '../../../support/executor-harness';
import { cancelJob, describeSlurm, sbatch, slurmEnv } from '../../../support/slurm';
import { describeEachHelper, useHelperEnv } from './process/spawner-fixtures';
import { cleanupFifos, fifo, type Fifo } from '../../../support/fifo';

/** How long the 2-node job may take to start (other Slurm tests may hold the nodes). */
const JOB_START_MS = 60_000;

function slot(node: string, cores: number[], gpus: number[] = []): Slot {
  return { node, cores, gpus };
}

/** Runs `wrapper` under plain sh with `env`, printing what the rank sees. */
function rankSees(wrapper: string, env: Record<string, string>, args: string[] = []): string {
  const show =
    'printf "%s|" "$PF_RANK" "${PF_GPUS-unset}" "${CUDA_VISIBLE_DEVICES-unset}" ' +
    '"${PF_RANK_GPUS-unset}" "$@"';
  return execFileSync('/bin/sh', ['-c', wrapper, 'pf-rank', '/bin/sh', '-c', show, 'x', ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

describe('the srun rank wrapper (plain sh, no srun)', () => {
  it('takes the rank from SLURM_PROCID, not from variables mpirun left in the environment', () => {
    const env = { SLURM_PROCID: '2', OMPI_COMM_WORLD_RANK: '0', PMIX_RANK: '0' };
    expect(rankSees(SRUN_RANK_WRAPPER, { ...env, PF_RANK_GPUS: '0;1;2,3' })).toBe(
      '2|2,3|2,3|unset|',
    );
    // mpirun's wrapper ignores SLURM_PROCID, which the agent's batch step sets to 0.
    expect(rankSees(RANK_WRAPPER, { SLURM_PROCID: '0', OMPI_COMM_WORLD_RANK: '1' })).toBe(
      '1|||unset|',
    );
  });

  it('leaves CUDA_VISIBLE_DEVICES to Slurm when the GPUs are GRES', () => {
    const env = { SLURM_PROCID: '1', PF_RANK_GPUS: '4;5', CUDA_VISIBLE_DEVICES: '0' };
    expect(rankSees(SRUN_GRES_RANK_WRAPPER, env)).toBe('1|5|0|unset|');
  });

  it('passes arguments through untouched', () => {
    const args = ['a b', `it's "quoted"`, '$HOME', '*', '', 'x\ny'];
    expect(rankSees(SRUN_RANK_WRAPPER, { SLURM_PROCID: '0' }, args)).toBe(
      `0|||unset|${args.join('|')}|`,
    );
  });

  it('refuses to run outside srun', () => {
    expect(() => rankSees(SRUN_RANK_WRAPPER, {})).toThrow(/not started by srun/);
  });
});

describeSlurm('ExecutorCore + SpawnerPool + real srun in a Slurm allocation', () => {
  const HOST = os.hostname();
  let dir: string;
  let jobId: string | undefined;
  /** SLURM_* variables of the job's batch step. */
  const batchEnv: Record<string, string> = {};
  /** The Slurm node the batch step (the "agent") runs on. */
  let agentNode: string;
  let h: ExecutorHarness | undefined;

  beforeAll(async () => {
    const slurm = slurmEnv()!;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-srun-'));
    const script = path.join(dir, 'job.sh');
    fs.writeFileSync(
      script,
      [
        '#!/bin/sh',
        'env > "$1/job.env"',
        'echo ready > "$1/ready.fifo"',
        'exec sleep 300',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    const ready = fifo(path.join(dir, 'ready.fifo'));
    jobId = await sbatch(slurm, [
      '--nodes=2',
      // the cases place slots on n1 and n2 by name; the lab has more nodes
      '--nodelist=n1,n2',
      '--exclusive',
      '--mem=500',
      '--time=5', // minutes: a job this file failed to cancel ends on its own
      '--job-name=pf-srun-test',
      `--chdir=${dir}`,
      `--output=${path.join(dir, 'job.out')}`,
      script,
      dir,
    ]);
    await ready.text(1, JOB_START_MS);
    for (const line of fs.readFileSync(path.join(dir, 'job.env'), 'utf8').split('\n')) {
      const m = /^(SLURMD?_[A-Z0-9_]+)=(.*)$/.exec(line);
      if (m !== null) batchEnv[m[1]!] = m[2]!;
    }
    agentNode = batchEnv.SLURMD_NODENAME ?? 'n1';
  }, JOB_START_MS + 15_000);

  afterAll(async () => {
    cleanupFifos();
    if (jobId !== undefined) await cancelJob(slurmEnv()!, jobId);
    fs.rmSync(dir, { recursive: true, force: true });
  }, 20_000);

  // One job, shared: the cases run once with each spawner helper.
  describeEachHelper('runs srun steps', (helper) => {
    useHelperEnv(helper);

    beforeEach(async () => {
      h = await ExecutorHarness.start(dir, {
        prefix: 'srun',
        launch: { agentNode: { name: agentNode }, srun: { executable: 'srun' } },
        env: batchEnv,
      });
    });

    afterEach(async () => {
      await h?.pool.close();
      h = undefined;
      cleanupFifos();
    });

    const SHOW = 'echo "rank=$PF_RANK on $(hostname) of $PF_RANKS gpus=$CUDA_VISIBLE_DEVICES"';
    const show: TaskDescription = { executable: '/bin/sh', arguments: ['-c', SHOW] };

    it('runs a job whose batch step is on n1, with SLURM_JOB_ID set', () => {
      expect(batchEnv.SLURM_JOB_ID).toBe(jobId);
      expect(agentNode).toBe('n1');
    });

    it('runs rank i on the node of slot i, with the GPUs of its slot', async () => {
      const t = h!.task({ ...show, ranks: 2 }, [slot('n1', [0], [0]), slot('n2', [0], [1])]);
      h!.core.onTasks([t]);
      const out = await h!.done(t);
      expect(t.state).toBe('AGENT_STAGING_OUTPUT_PENDING');
      expect(t.exitCode).toBe(0);
      expect(lines(out)).toEqual(['rank=0 on n1 of 2 gpus=0', 'rank=1 on n2 of 2 gpus=1']);
    });

    it('follows the order of the slots, not a block or cyclic layout', async () => {
      const slots = [slot('n2', [0]), slot('n1', [0]), slot('n1', [1]), slot('n2', [1])];
      const t = h!.task({ ...show, ranks: 4 }, slots);
      h!.core.onTasks([t]);
      expect(lines(await h!.done(t))).toEqual([
        'rank=0 on n2 of 4 gpus=',
        'rank=1 on n1 of 4 gpus=',
        'rank=2 on n1 of 4 gpus=',
        'rank=3 on n2 of 4 gpus=',
      ]);
    });

    it('runs a single rank placed on n2 there, and forks one placed on the agent node', async () => {
      const there = h!.task(show, [slot('n2', [1], [3])]);
      const here = h!.task(show, [slot(agentNode, [1])]);
      const asked = h!.task({ ...show, launch: 'srun' }, [slot(agentNode, [0])]);
      h!.core.onTasks([there, here, asked]);
      expect(await h!.done(there)).toBe('rank=0 on n2 of 1 gpus=3\n');
      // Forked by the spawner itself: on this machine, outside the fake node's UTS namespace.
      expect(await h!.done(here)).toBe(`rank=0 on ${HOST} of 1 gpus=\n`);
      expect(await h!.done(asked)).toBe(`rank=0 on ${agentNode} of 1 gpus=\n`);
    });

    it('runs preExec and postExec in every rank, on its node, naming the rank that failed', async () => {
      const ranks = [slot('n1', [0]), slot('n2', [0])];
      const ok = h!.task(
        {
          ranks: 2,
          executable: '/bin/sh',
          arguments: ['-c', 'echo "$PF_RANK $FOO $*"', 'x', 'a b'],
          preExec: ['export FOO="pre$PF_RANK-$(hostname)"'],
          postExec: ['echo "$PF_RANK" > "post-$(hostname)"'],
        },
        ranks,
      );
      const bad = h!.task(
        { ranks: 2, executable: '/bin/true', preExec: ['[ "$(hostname)" = n1 ] || exit 6'] },
        ranks,
      );
      h!.core.onTasks([ok, bad]);
      expect(lines(await h!.done(ok))).toEqual(['0 pre0-n1 a b', '1 pre1-n2 a b']);
      expect(fs.readFileSync(`${ok.sandbox!}/post-n2`, 'utf8')).toBe('1\n');
      await h!.done(bad);
      expect(bad.reason).toMatchObject({ code: 'E_PRE_EXEC', detail: { rank: 1, exitCode: 6 } });
    });

    it('hands arguments with spaces and quotes, and the task environment, to every rank', async () => {
      const args = ['a b', `it's "quoted"`, '$HOME', '*', ''];
      const t = h!.task(
        {
          ranks: 2,
          executable: '/bin/sh',
          arguments: ['-c', 'line=$(printf "%s|" "$PF_RANK" "$GREETING" "$@"); echo "$line"', 'x'],
          environment: { GREETING: 'hello world' },
        },
        [slot('n1', [0]), slot('n2', [0])],
      );
      t.description.arguments!.push(...args);
      h!.core.onTasks([t]);
      expect(lines(await h!.done(t))).toEqual(
        [0, 1].map((r) => `${r}|hello world|${args.join('|')}|`),
      );
    });

    it('reports the exit code of a failed single rank', async () => {
      const t = h!.task({ executable: '/bin/sh', arguments: ['-c', 'exit 3'] }, [slot('n2', [0])]);
      h!.core.onTasks([t]);
      await h!.done(t);
      expect(t.state).toBe('AGENT_STAGING_OUTPUT_PENDING');
      expect(t.exitCode).toBe(3);
    });

    it('ends the other ranks when one fails, and exits non-zero', async () => {
      const t = h!.task(
        {
          ranks: 2,
          executable: '/bin/sh',
          arguments: ['-c', 'if [ "$PF_RANK" = 1 ]; then exit 3; fi; exec sleep 30'],
        },
        [slot('n1', [0]), slot('n2', [0])],
      );
      h!.core.onTasks([t]);
      await h!.done(t); // within WAIT_MS: rank 0 did not sleep its 30 s
      expect(t.state).toBe('AGENT_STAGING_OUTPUT_PENDING');
      expect(t.exitCode).not.toBe(0);
      expect(fs.readFileSync(`${t.sandbox!}/stderr`, 'utf8')).toContain(
        'task 1: Exited with exit code 3',
      );
    });

    it('runs two steps side by side on one node of the allocation', async () => {
      const file = path.join(dir, `${helper}-side.fifo`);
      const out = fifo(file);
      const desc: TaskDescription = {
        executable: '/bin/sh',
        arguments: ['-c', 'exec >"$FIFO"; echo "up $(hostname)"; exec sleep 30'],
        environment: { FIFO: file },
      };
      const a = h!.task(desc, [slot('n2', [0])]);
      const b = h!.task({ ...desc, memPerRankMb: 100 }, [slot('n2', [1])]);
      h!.core.onTasks([a, b]);
      expect(lines(await out.text(2))).toEqual(['up n2', 'up n2']);
      h!.core.onCancel([a.uid, b.uid]);
      await Promise.all([h!.done(a), h!.done(b)]);
      await out.gone();
    });

    /**
     * A 2-rank task, one rank on core `core` of n1 and of n2, each printing "up RANK HOST" to a
     * FIFO and then sleeping (ignoring SIGTERM when `deaf`); resolves once both are up.
     */
    async function twoRanksUp(
      name: string,
      core: number,
      deaf = false,
    ): Promise<{ t: TaskRecord; out: Fifo }> {
      const file = path.join(dir, `${helper}-${name}.fifo`);
      const out = fifo(file);
      const trap = deaf ? 'trap "" TERM; ' : '';
      const t = h!.task(
        {
          ranks: 2,
          executable: '/bin/sh',
          arguments: ['-c', `${trap}exec >"$FIFO"; echo "up $PF_RANK $(hostname)"; exec sleep 30`],
          environment: { FIFO: file },
        },
        [slot('n1', [core]), slot('n2', [core])],
      );
      h!.core.onTasks([t]);
      expect(lines(await out.text(2))).toEqual(['up 0 n1', 'up 1 n2']);
      return { t, out };
    }

    it('cancels a running task: every rank on both nodes ends', async () => {
      const { t, out } = await twoRanksUp('cancel', 0);
      h!.core.onCancel([t.uid]);
      await h!.done(t);
      expect(t.state).toBe('CANCELED');
      await out.gone();
    });

    it('leaves no rank behind when the spawner helpers stop (the agent is gone)', async () => {
      const { out } = await twoRanksUp('stop', 0, true);
      await h!.pool.close();
      await out.gone();
    });

    it('leaves no rank behind when the agent shuts down (SIGKILL to srun)', async () => {
      const { t, out } = await twoRanksUp('kill', 1, true);
      h!.core.onShutdown('FAILED', { code: 'E_PILOT_ENDED', message: 'bye', component: 'Agent' });
      expect(t.state).toBe('FAILED');
      await out.gone();
    });
  });
});
