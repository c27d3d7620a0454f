import { describe, expect, it } from '@jest/globals';
import { ALLOCATIONS, readAllocation } from '../../../../src/agent/resources/registry';
import schema from '../../../../schemas/agent-config.schema.json';
import { agentConfig } from './allocation-fixtures';

describe('ALLOCATIONS', () => {
  it('has one allocation for each resource the agent config schema allows, and no other', () => {
    expect(Object.keys(ALLOCATIONS).sort()).toEqual([...schema.properties.resource.enum].sort());
  });

  it('reads a config without a resource as the local machine, whatever the environment says', () => {
    const env = { SLURM_JOB_NODELIST: 'n[1-2]', SLURM_JOB_CPUS_PER_NODE: '4(x2)' };
    const allocation = readAllocation(agentConfig({ cores: 3 }), env);
    expect(allocation.nodes).toHaveLength(1);
    expect(allocation.nodes[0]).toMatchObject({ name: allocation.node, cores: 3 });
  });

  it('reads a Slurm config from the environment it is given', () => {
    const env = { SLURM_JOB_NODELIST: 'n[1-2]', SLURM_JOB_CPUS_PER_NODE: '4(x2)' };
    const allocation = readAllocation(agentConfig({ resource: 'slurm' }), {
      ...env,
      SLURMD_NODENAME: 'n2',
    });
    expect(allocation.node).toBe('n2');
    expect(allocation.nodes.map((n) => [n.name, n.cores])).toEqual([
      ['n1', 4],
      ['n2', 4],
    ]);
  });
});
