import { describe, expect, it } from '@jest/globals';
import {
  slurmAllocation,
  type SlurmEffects,
} from '../../../../src/agent/resources/slurm-allocation';
import type { MpiProbeOptions } from '../../../../src/agent/resources/slurm/mpi-probe';
import { ValidationError } from '../../../../src/errors';
import { linesLogger } from '../../../support/lines-logger';
import { site } from './allocation-fixtures';

/** A 2-node job as its batch step sees it (recorded on the test cluster, trimmed). */
const JOB = {
  SLURM_JOB_ID: '42',
  SLURM_JOB_NODELIST: 'c[1-2]',
  SLURM_JOB_CPUS_PER_NODE: '2(x2)',
  SLURMD_NODENAME: 'c1',
  SLURM_MEM_PER_NODE: '1000',
};

/** Fake effects that record what they were asked and answer as told. */
function fakes(answer: { end?: number; mpi?: string; warning?: string; host?: string } = {}) {
  const calls: {
    jobEnd: NodeJS.ProcessEnv[];
    probe: MpiProbeOptions[];
    host: string[];
    nodes: string[];
  } = { jobEnd: [], probe: [], host: [], nodes: [] };
  const effects: SlurmEffects = {
    jobEnd: (env) => {
      calls.jobEnd.push(env);
      return Promise.resolve(answer.end);
    },
    probeMpi: (o) => {
      calls.probe.push(o);
      return Promise.resolve({
        mpi: answer.mpi,
        why: 'asked',
        facts: { srunTypes: ['pmix', 'none'] },
        ...(answer.warning !== undefined ? { warning: answer.warning } : {}),
      });
    },
    serviceHost: (address) => {
      calls.host.push(address);
      return Promise.resolve(answer.host ?? 'c1.example');
    },
    nodeAddresses: (list) => {
      calls.nodes.push(list);
      return Promise.resolve(new Map([['c2', '10.0.0.2']]));
    },
  };
  return { effects, calls };
}

describe('slurmAllocation', () => {
  it("is the job's nodes, the agent's being SLURMD_NODENAME", () => {
    const a = slurmAllocation(site({ resource: 'slurm', gpus: 1 }, JOB), fakes().effects);
    expect(a.node).toBe('c1');
    expect(a.nodes).toEqual([
      { name: 'c1', cores: 2, gpus: 1, memMb: 1000 },
      { name: 'c2', cores: 2, gpus: 1, memMb: 1000 },
    ]);
  });

  it('names the host when Slurm does not name the node', () => {
    const { SLURMD_NODENAME: _, ...env } = JOB;
    expect(slurmAllocation(site({ resource: 'slurm' }, env), fakes().effects).node).toBe('box');
  });

  it('refuses an environment that is not a Slurm job, naming the variable', () => {
    expect(() => slurmAllocation(site({ resource: 'slurm' }, {}), fakes().effects)).toThrow(
      ValidationError,
    );
    expect(() => slurmAllocation(site({ resource: 'slurm' }, {}), fakes().effects)).toThrow(
      /SLURM_JOB_NODELIST/,
    );
  });

  it("asks scontrol for the job's end with the job's environment", async () => {
    const { effects, calls } = fakes({ end: 1_700_000_000_000 });
    const a = slurmAllocation(site({ resource: 'slurm' }, JOB), effects);
    await expect(a.jobEnd(() => undefined)).resolves.toBe(1_700_000_000_000);
    expect(calls.jobEnd).toEqual([JOB]);
  });

  it("offers srun on its node, with the probed PMI plug-in, the service host and the other nodes' addresses", async () => {
    const { effects, calls } = fakes({ mpi: 'pmix', host: '10.0.0.7' });
    const cfg = { resource: 'slurm' as const, mpi: 'auto' };
    const a = slurmAllocation(site(cfg, JOB), effects);
    const log = linesLogger();
    const found = await a.launch({ log, timeoutMs: 500 });
    expect(found).toEqual({
      options: {
        agentNode: { name: 'c1', host: '10.0.0.7' },
        srun: { executable: 'srun', gpuGres: false, mpi: 'pmix' },
        nodeHosts: new Map([['c2', '10.0.0.2']]),
      },
      warnings: [],
    });
    expect(calls.probe).toEqual([
      { srun: 'srun', node: 'c1', env: JOB, timeoutMs: 500, requested: 'auto' },
    ]);
    expect(calls.host).toEqual(['tcp://10.0.0.1:2']);
    expect(calls.nodes).toEqual(['c[1-2]']);
    expect(log.lines).toEqual([
      ['info', 'srun mpi plug-in', { mpi: 'pmix', why: 'asked', srunTypes: ['pmix', 'none'] }],
    ]);
  });

  it('leaves the plug-in to Slurm when the probe chose none, and asks for GPUs as GRES where Slurm gave some', async () => {
    for (const gpus of [{ SLURM_JOB_GPUS: '0,1' }, { SLURM_GPUS_ON_NODE: '2' }]) {
      const { effects, calls } = fakes();
      const a = slurmAllocation(site({ resource: 'slurm' }, { ...JOB, ...gpus }), effects);
      const log = linesLogger();
      const { options } = await a.launch({ log, timeoutMs: 1 });
      expect(options).toEqual({
        agentNode: { name: 'c1', host: 'c1.example' },
        srun: { executable: 'srun', gpuGres: true },
        nodeHosts: new Map([['c2', '10.0.0.2']]),
      });
      expect(calls.probe[0]).not.toHaveProperty('requested');
      expect(log.lines[0]![2]).toMatchObject({ mpi: "(Slurm's default)" });
    }
  });

  it("says the probe's warning once, logged and returned", async () => {
    const warning = 'MPI programs started by srun will fail';
    const a = slurmAllocation(site({ resource: 'slurm' }, JOB), fakes({ warning }).effects);
    const log = linesLogger();
    const found = await a.launch({ log, timeoutMs: 1 });
    expect(found.warnings).toEqual([warning]);
    expect(log.lines.filter(([level]) => level === 'warn')).toEqual([
      ['warn', 'MPI programs started by srun may fail', { warning }],
    ]);
  });
});
