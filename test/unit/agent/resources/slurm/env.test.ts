import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../../../../src/errors';
import { DEFAULT_MEM_MB_PER_NODE, slurmNodes } from '../../../../../src/agent/resources/slurm/env';

/** Runs `fn`, expects a ValidationError and returns it. */
function rejection(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return e as ValidationError;
  }
  throw new Error('expected a ValidationError, got none');
}

const opts = { gpusPerNode: 0 };

describe('slurmNodes', () => {
  it('reads names and per-node cores of a job on n[1-2] (as the lab cluster sets them)', () => {
    const env = {
      SLURM_JOB_NODELIST: 'n[1-2]',
      SLURM_JOB_CPUS_PER_NODE: '2(x2)',
      SLURM_CPUS_ON_NODE: '2',
    };
    expect(slurmNodes(env, opts)).toEqual([
      { name: 'n1', cores: 2, gpus: 0, memMb: DEFAULT_MEM_MB_PER_NODE },
      { name: 'n2', cores: 2, gpus: 0, memMb: DEFAULT_MEM_MB_PER_NODE },
    ]);
  });

  it('expands N(xM) repeats in node-list order', () => {
    const env = { SLURM_JOB_NODELIST: 'a[1-3],b7', SLURM_JOB_CPUS_PER_NODE: '2(x3),1' };
    expect(slurmNodes(env, opts).map((n) => [n.name, n.cores])).toEqual([
      ['a1', 2],
      ['a2', 2],
      ['a3', 2],
      ['b7', 1],
    ]);
  });

  it('falls back to SLURM_NODELIST when SLURM_JOB_NODELIST is unset', () => {
    const env = { SLURM_NODELIST: 'x[01-02]', SLURM_JOB_CPUS_PER_NODE: '4,8' };
    expect(slurmNodes(env, opts).map((n) => [n.name, n.cores])).toEqual([
      ['x01', 4],
      ['x02', 8],
    ]);
  });

  it('prefers SLURM_JOB_NODELIST (the job) to SLURM_NODELIST (a step inside it)', () => {
    const env = { SLURM_JOB_NODELIST: 'n[1-2]', SLURM_NODELIST: 'n1', SLURM_CPUS_ON_NODE: '3' };
    expect(slurmNodes(env, opts).map((n) => n.name)).toEqual(['n1', 'n2']);
  });

  it('uses SLURM_CPUS_ON_NODE for every node when SLURM_JOB_CPUS_PER_NODE is unset', () => {
    const env = { SLURM_JOB_NODELIST: 'n[1-3]', SLURM_CPUS_ON_NODE: '6' };
    expect(slurmNodes(env, opts).map((n) => n.cores)).toEqual([6, 6, 6]);
  });

  it('takes GPUs from SLURM_GPUS_ON_NODE, then SLURM_JOB_GPUS, then the option', () => {
    const base = { SLURM_JOB_NODELIST: 'g1', SLURM_CPUS_ON_NODE: '8' };
    const gpus = (env: NodeJS.ProcessEnv): number[] =>
      slurmNodes(env, { gpusPerNode: 4 }).map((n) => n.gpus);
    expect(gpus({ ...base, SLURM_GPUS_ON_NODE: '2', SLURM_JOB_GPUS: '0,1,2' })).toEqual([2]);
    expect(gpus({ ...base, SLURM_GPUS_ON_NODE: '0' })).toEqual([0]);
    expect(gpus({ ...base, SLURM_JOB_GPUS: '0,1,2' })).toEqual([3]);
    expect(gpus(base)).toEqual([4]);
  });

  it('takes memory from SLURM_MEM_PER_NODE, then SLURM_MEM_PER_CPU x cores, then the option', () => {
    const base = { SLURM_JOB_NODELIST: 'n[1-2]', SLURM_JOB_CPUS_PER_NODE: '2,4' };
    const mem = (env: NodeJS.ProcessEnv, memMbPerNode?: number): number[] =>
      slurmNodes(env, memMbPerNode === undefined ? opts : { ...opts, memMbPerNode }).map(
        (n) => n.memMb,
      );
    expect(mem({ ...base, SLURM_MEM_PER_NODE: '100', SLURM_MEM_PER_CPU: '256' }, 7)).toEqual([
      100, 100,
    ]);
    expect(mem({ ...base, SLURM_MEM_PER_CPU: '256' }, 7)).toEqual([512, 1024]);
    expect(mem(base, 7)).toEqual([7, 7]);
    expect(mem(base)).toEqual([DEFAULT_MEM_MB_PER_NODE, DEFAULT_MEM_MB_PER_NODE]);
  });

  it.each([
    [{}, 'SLURM_JOB_NODELIST', 'is not set (nor SLURM_NODELIST): not inside a Slurm allocation?'],
    [
      { SLURM_JOB_NODELIST: ' ' },
      'SLURM_JOB_NODELIST',
      'is not set (nor SLURM_NODELIST): not inside a Slurm allocation?',
    ],
    [
      { SLURM_JOB_NODELIST: 'n[1-2' },
      'SLURM_JOB_NODELIST',
      "'n[1-2' is not a valid host list: malformed Slurm host list 'n[1-2': '[' is never closed",
    ],
    [
      { SLURM_NODELIST: 'n[2-1]', SLURM_CPUS_ON_NODE: '1' },
      'SLURM_NODELIST',
      "'n[2-1]' is not a valid host list: malformed Slurm host list 'n[2-1]': range '2-1' in [2-1] runs backwards",
    ],
    [
      { SLURM_JOB_NODELIST: 'n[1-2]' },
      'SLURM_JOB_CPUS_PER_NODE',
      'is not set (nor SLURM_CPUS_ON_NODE)',
    ],
    [
      { SLURM_JOB_NODELIST: 'n[1-2]', SLURM_JOB_CPUS_PER_NODE: '2(3)' },
      'SLURM_JOB_CPUS_PER_NODE',
      "'2(3)' is malformed at '2(3)': expected N or N(xM) items separated by commas, as in 2(x3),1",
    ],
    [
      { SLURM_JOB_NODELIST: 'n[1-2]', SLURM_JOB_CPUS_PER_NODE: '2,0' },
      'SLURM_JOB_CPUS_PER_NODE',
      "'2,0' is malformed at '0': expected N or N(xM) items separated by commas, as in 2(x3),1",
    ],
    [
      { SLURM_JOB_NODELIST: 'n[1-2]', SLURM_JOB_CPUS_PER_NODE: '2(x3)' },
      'SLURM_JOB_CPUS_PER_NODE',
      "'2(x3)' gives 3 node(s) but the node list has 2",
    ],
    [
      { SLURM_JOB_NODELIST: 'n[1-3]', SLURM_JOB_CPUS_PER_NODE: '2' },
      'SLURM_JOB_CPUS_PER_NODE',
      "'2' gives 1 node(s) but the node list has 3",
    ],
    [
      { SLURM_JOB_NODELIST: 'n1', SLURM_CPUS_ON_NODE: 'two' },
      'SLURM_CPUS_ON_NODE',
      "'two' is not an integer >= 1",
    ],
    [
      { SLURM_JOB_NODELIST: 'n1', SLURM_CPUS_ON_NODE: '1', SLURM_GPUS_ON_NODE: '-1' },
      'SLURM_GPUS_ON_NODE',
      "'-1' is not an integer >= 0",
    ],
    [
      { SLURM_JOB_NODELIST: 'n1', SLURM_CPUS_ON_NODE: '1', SLURM_JOB_GPUS: 'GPU-0a1b' },
      'SLURM_JOB_GPUS',
      "'GPU-0a1b' is not a comma-separated list of GPU indices",
    ],
    [
      { SLURM_JOB_NODELIST: 'n1', SLURM_CPUS_ON_NODE: '1', SLURM_MEM_PER_NODE: '4G' },
      'SLURM_MEM_PER_NODE',
      "'4G' is not an integer >= 1",
    ],
    [
      { SLURM_JOB_NODELIST: 'n1', SLURM_CPUS_ON_NODE: '1', SLURM_MEM_PER_CPU: '0' },
      'SLURM_MEM_PER_CPU',
      "'0' is not an integer >= 1",
    ],
  ])('rejects %j, naming %s', (env, variable, why) => {
    const err = rejection(() => slurmNodes(env, opts));
    expect(err.message).toBe(`Slurm environment: ${variable} ${why}`);
    expect(err.issues).toEqual([{ path: `/${variable}`, message: why }]);
  });

  it('keeps the host-list error as the cause', () => {
    const err = rejection(() => slurmNodes({ SLURM_JOB_NODELIST: 'n]' }, opts));
    expect(err.cause).toBeInstanceOf(ValidationError);
  });

  it('rejects options that are not non-negative integers', () => {
    const env = { SLURM_JOB_NODELIST: 'n1', SLURM_CPUS_ON_NODE: '1' };
    expect(rejection(() => slurmNodes(env, { gpusPerNode: 1.5 })).message).toBe(
      'invalid slurmNodes option gpusPerNode: 1.5 is not an integer >= 0',
    );
    expect(rejection(() => slurmNodes(env, { gpusPerNode: 0, memMbPerNode: 0 })).issues).toEqual([
      { path: '/memMbPerNode', message: 'must be an integer >= 1' },
    ]);
  });
});
