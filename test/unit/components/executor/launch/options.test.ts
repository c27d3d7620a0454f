import { describe, expect, it } from '@jest/globals';
import { launchOptionsFor } from '../../../../../src/components/executor/launch';

describe('launchOptionsFor', () => {
  it('outside Slurm: mpirun from PATH, no srun, --allow-run-as-root only for root', () => {
    const where = { resource: 'local', env: { SLURM_JOB_GPUS: '0' }, nodeName: 'box' };
    expect(launchOptionsFor({ ...where, uid: 1000 })).toEqual({ mpirun: 'mpirun', asRoot: false });
    expect(launchOptionsFor({ ...where, uid: 0 }).asRoot).toBe(true);
    expect(launchOptionsFor({ ...where, uid: undefined }).asRoot).toBe(false);
  });

  it('inside a Slurm allocation: srun on the agent node, GPUs as GRES when Slurm names them', () => {
    const where = { resource: 'slurm', uid: 1000, nodeName: 'n1' };
    expect(launchOptionsFor({ ...where, env: {} }).slurm).toEqual({
      srun: 'srun',
      node: 'n1',
      gpuGres: false,
    });
    expect(launchOptionsFor({ ...where, env: { SLURM_JOB_GPUS: '0,1' } }).slurm?.gpuGres).toBe(
      true,
    );
    expect(launchOptionsFor({ ...where, env: { SLURM_GPUS_ON_NODE: '2' } }).slurm?.gpuGres).toBe(
      true,
    );
  });

  it("carries the pilot's CPU map, and under Slurm its PMI plug-in", () => {
    const cpuIds = new Map([['n1', [0, 1]]]);
    const where = { resource: 'slurm', uid: 1000, nodeName: 'n1', env: {}, cpuIds, mpi: 'pmix' };
    const opts = launchOptionsFor(where);
    expect(opts.cpuIds).toBe(cpuIds);
    expect(opts.slurm?.mpi).toBe('pmix');
    expect(launchOptionsFor({ ...where, mpi: undefined }).slurm).not.toHaveProperty('mpi');
    expect(launchOptionsFor({ ...where, resource: 'local' })).toEqual({
      mpirun: 'mpirun',
      asRoot: false,
      cpuIds,
    });
  });
});
