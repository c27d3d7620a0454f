import { describe, expect, it } from '@jest/globals';
import {
  parseOmpiInfo,
  parseSrunMpiList,
} from '../../../../../src/agent/resources/slurm/mpi-probe';

describe('what srun and ompi_info print', () => {
  it('reads the plug-ins of srun --mpi=list (Slurm 22.05, Debian 12)', () => {
    const out =
      'MPI plugin types are...\n\tpmix\n\tnone\n\tcray_shasta\n\tpmi2\n' +
      'specific pmix plugin versions available: pmix_v4\n';
    expect(parseSrunMpiList(out)).toEqual(['pmix', 'none', 'cray_shasta', 'pmi2', 'pmix_v4']);
    expect(parseSrunMpiList('MPI plugin types are...\n\tnone\n')).toEqual(['none']);
  });

  it("reads OpenMPI's version and PMI components from ompi_info --parsable", () => {
    // OpenMPI 4.1.4 of Debian 12 (excerpt): PMIx (ext3x), no Slurm PMI (s1, s2)
    const debian = [
      'package:Debian OpenMPI',
      'ompi:version:full:4.1.4',
      'mca:pmix:ext3x:version:"component:4.1.4"',
      'mca:pmix:isolated:version:"component:4.1.4"',
      'mca:pmix:flux:version:"component:4.1.4"',
      'mca:ess:slurm:version:"component:4.1.4"',
    ].join('\n');
    expect(parseOmpiInfo(debian)).toEqual({
      version: '4.1.4',
      pmix: true,
      pmi2: false,
      pmi1: false,
    });
    const slurmPmi = 'ompi:version:full:3.1.6\nmca:pmix:s1:version:x\nmca:pmix:s2:version:x\n';
    expect(parseOmpiInfo(slurmPmi)).toEqual({
      version: '3.1.6',
      pmix: false,
      pmi2: true,
      pmi1: true,
    });
    // OpenMPI 5 has PMIx built in (no pmix framework)
    expect(parseOmpiInfo('ompi:version:full:5.0.3\n')?.pmix).toBe(true);
    expect(parseOmpiInfo('nothing here')).toBeUndefined();
  });
});
