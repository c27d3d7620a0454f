import { describe, expect, it } from '@jest/globals';
import {
  checkedMpi,
  chooseMpi,
  type MpiFacts,
} from '../../../../../src/components/executor/launch';

/** What Debian 12 has: OpenMPI 4.1.4 with PMIx only, srun 22.05 with pmix and pmi2. */
const DEBIAN: MpiFacts = {
  srunTypes: ['pmix', 'none', 'cray_shasta', 'pmi2', 'pmix_v4'],
  openmpi: { version: '4.1.4', pmix: true, pmi2: false, pmi1: false },
};

describe('chooseMpi', () => {
  it("picks PMIx for an OpenMPI built without Slurm's PMI when srun offers it", () => {
    expect(chooseMpi(undefined, DEBIAN)).toEqual({
      mpi: 'pmix',
      why: 'OpenMPI 4.1.4 starts through PMIx',
    });
    expect(chooseMpi('auto', DEBIAN).mpi).toBe('pmix');
  });

  it("falls back to Slurm's PMI-2, then PMI-1 (Slurm's default), when OpenMPI has them", () => {
    const ompi = { version: '4.0.7', pmix: false, pmi2: true, pmi1: true };
    expect(chooseMpi(undefined, { ...DEBIAN, openmpi: ompi }).mpi).toBe('pmi2');
    const noPmi2 = { srunTypes: ['none', 'pmix'], openmpi: ompi };
    expect(chooseMpi(undefined, noPmi2)).toEqual({
      mpi: undefined,
      why: "OpenMPI 4.0.7 has Slurm's PMI-1: Slurm's default",
    });
  });

  it('warns once, choosing nothing, when srun lacks what OpenMPI needs', () => {
    const choice = chooseMpi(undefined, { ...DEBIAN, srunTypes: ['none', 'pmi2'] });
    expect(choice.mpi).toBeUndefined();
    expect(choice.warning).toContain(
      'OpenMPI 4.1.4 on PATH needs PMIx, and srun here offers none, pmi2: MPI programs started by srun will fail',
    );
    expect(choice.warning).toContain("launch 'mpirun'");
    const noList = chooseMpi(undefined, { openmpi: DEBIAN.openmpi! });
    expect(noList.warning).toContain('srun here offers nothing (srun --mpi=list failed)');
  });

  it("picks PMI-2 for MPICH, and Slurm's default without an MPI library", () => {
    expect(chooseMpi(undefined, { srunTypes: ['none', 'pmi2'], mpich: true }).mpi).toBe('pmi2');
    expect(chooseMpi(undefined, { srunTypes: ['none'], mpich: true }).mpi).toBeUndefined();
    expect(chooseMpi(undefined, { srunTypes: DEBIAN.srunTypes! })).toEqual({
      mpi: undefined,
      why: "no MPI library on PATH needs a plug-in: Slurm's default",
    });
  });

  it('takes the plug-in the pilot asks for, warning when srun does not offer it', () => {
    expect(chooseMpi('none', DEBIAN)).toEqual({
      mpi: 'none',
      why: 'asked by the pilot (agent.mpi)',
    });
    expect(chooseMpi('pmix_v4', DEBIAN).warning).toBeUndefined();
    expect(chooseMpi('pmix_v5', DEBIAN)).toMatchObject({
      mpi: 'pmix_v5',
      warning: expect.stringContaining("agent.mpi 'pmix_v5' is not a plug-in srun offers here"),
    });
  });
});

describe('checkedMpi', () => {
  const pmix = chooseMpi(undefined, DEBIAN);

  it('keeps a choice whose test step ran, or that the test could not judge', () => {
    expect(checkedMpi(pmix, undefined, true)).toBe(pmix);
    expect(checkedMpi(pmix, undefined, undefined, 'srun: error: timeout')).toBe(pmix);
  });

  it('drops an automatic choice whose step fails where --mpi=none runs, with a warning', () => {
    const err = 'srun: error: Application launch failed: Socket timed out on send/recv operation';
    const checked = checkedMpi(pmix, 'auto', false, err);
    expect(checked.mpi).toBeUndefined();
    expect(checked.why).toBe(
      `OpenMPI 4.1.4 starts through PMIx, but a step with srun --mpi=pmix fails here (${err}): Slurm's default`,
    );
    expect(checked.warning).toContain('MPI programs started by srun will fail');
    expect(checked.warning).toContain('restart slurmd');
  });

  it('keeps a plug-in the pilot asked for, warning that its steps fail', () => {
    const asked = chooseMpi('pmix', DEBIAN);
    const checked = checkedMpi(asked, 'pmix', false);
    expect(checked.mpi).toBe('pmix');
    expect(checked.warning).toBe(
      'a step with srun --mpi=pmix fails here: every srun step of this pilot will fail',
    );
    const bogus = checkedMpi(chooseMpi('pmix_v9', DEBIAN), 'pmix_v9', false, 'srun: error: x');
    expect(bogus.warning).toBe(
      'agent.mpi \'pmix_v9\' is not a plug-in srun offers here (pmix, none, cray_shasta, pmi2, pmix_v4): its srun steps will fail ("Invalid MPI type"); ' +
        'a step with srun --mpi=pmix_v9 fails here (srun: error: x): every srun step of this pilot will fail',
    );
  });
});
