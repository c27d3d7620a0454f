import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { slurmNodes } from '../../../src/agent/resources/slurm/env';
import {
  cancelJob,
  describeSlurm,
  sbatch,
  slurmEnv,
  waitForJobEnd,
  type SlurmEnv,
} from '../../support/slurm';

const CPUS_PER_NODE = Number(process.env.PILOTFISH_SLURM_CPUS_PER_NODE || 2);

describeSlurm('node discovery inside a Slurm job of the lab cluster', () => {
  let slurm: SlurmEnv;
  let dir: string;
  let jobId: string | undefined;

  beforeAll(() => {
    const env = slurmEnv();
    if (env === undefined) throw new Error('describeSlurm ran without a cluster');
    slurm = env;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-slurm-discovery-'));
  });

  afterEach(async () => {
    // a failed or timed-out test must not leave its job holding the nodes
    if (jobId !== undefined) await cancelJob(slurm, jobId);
    jobId = undefined;
  });

  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('finds n1 and n2 with their cores from the environment of a 2-node exclusive job', async () => {
    const envFile = path.join(dir, 'env');
    const hostsFile = path.join(dir, 'hosts');
    jobId = await sbatch(slurm, [
      '-N2',
      '--exclusive',
      '--job-name=pf-discovery',
      `--output=${path.join(dir, 'job-%j.out')}`,
      `--wrap=env -0 > ${envFile} && srun -N2 -n2 hostname > ${hostsFile}`,
    ]);
    const end = await waitForJobEnd(slurm, jobId, 30_000);
    const log = fs.readFileSync(path.join(dir, `job-${jobId}.out`), 'utf8');
    expect({ ...end, log }).toEqual({ state: 'COMPLETED', exitCode: '0:0', log: '' });
    jobId = undefined;

    const jobEnv = Object.fromEntries(
      fs
        .readFileSync(envFile, 'utf8')
        .split('\0')
        .filter((kv) => kv.includes('='))
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
    // the lab has more nodes than the job: which two it gets depends on what else runs
    const list = jobEnv.SLURM_JOB_NODELIST ?? '';
    expect(list).toMatch(/^n(\[\d+[-,]\d+\]|\d+,n\d+)$/);
    const nodes = slurmNodes(jobEnv, { gpusPerNode: 0 });
    expect(nodes).toHaveLength(2);
    for (const n of nodes) expect([n.name, n.cores, n.gpus]).toEqual([n.name, CPUS_PER_NODE, 0]);
    expect(nodes.every((n) => /^n\d+$/.test(n.name))).toBe(true);
    // each fake node runs in its own UTS namespace: a step on nX sees hostname nX
    const hosts = fs.readFileSync(hostsFile, 'utf8').trim().split('\n').sort();
    expect(hosts).toEqual(nodes.map((n) => n.name).sort());
  }, 45_000);
});
