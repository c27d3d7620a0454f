import { describe, expect, it } from '@jest/globals';
import {
  launchOptionsFor,
  type AgentNode,
  type SrunOptions,
} from '../../../../../src/components/executor/launch';

describe('launchOptionsFor', () => {
  it('without a step launcher: mpirun from PATH, no srun, --allow-run-as-root only for root', () => {
    expect(launchOptionsFor({ uid: 1000 })).toEqual({ mpirun: 'mpirun', asRoot: false });
    expect(launchOptionsFor({ uid: 1000, allocation: {} })).toEqual({
      mpirun: 'mpirun',
      asRoot: false,
    });
    expect(launchOptionsFor({ uid: 0 }).asRoot).toBe(true);
    expect(launchOptionsFor({ uid: undefined }).asRoot).toBe(false);
  });

  it("takes the allocation's step launcher as it is", () => {
    const agentNode: AgentNode = { name: 'n1', host: 'n1.example' };
    const srun: SrunOptions = { executable: 'srun', gpuGres: true, mpi: 'pmix' };
    expect(launchOptionsFor({ uid: 1000, allocation: { agentNode, srun } })).toEqual({
      mpirun: 'mpirun',
      asRoot: false,
      agentNode,
      srun,
    });
  });

  it("carries the pilot's CPU map", () => {
    const cpuIds = new Map([['n1', [0, 1]]]);
    expect(launchOptionsFor({ uid: 1000, cpuIds }).cpuIds).toBe(cpuIds);
    expect(launchOptionsFor({ uid: 1000, cpuIds: undefined })).not.toHaveProperty('cpuIds');
  });
});
