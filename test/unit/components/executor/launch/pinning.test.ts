import { describe, expect, it } from '@jest/globals';
import {
  cpuList,
  slotCpus,
  type BuildLaunchOptions,
} from '../../../../../src/components/executor/launch';
import { OPTS, launched, slot, task } from './helpers';

/** n1's cores are CPUs 4..7, n2's 0..3; n3 is not mapped (it declares more cores than CPUs). */
const CPU_IDS = new Map([
  ['n1', [4, 5, 6, 7]],
  ['n2', [0, 1, 2, 3]],
]);
const PINNED: BuildLaunchOptions = { ...OPTS, cpuIds: CPU_IDS };
const SLURM: BuildLaunchOptions = {
  ...PINNED,
  agentNode: { name: 'n1' },
  srun: { executable: 'srun' },
};

describe('cpuList', () => {
  it('writes CPU ids as a Linux cpulist, runs as ranges, sorted, once each', () => {
    expect(cpuList([3])).toBe('3');
    expect(cpuList([3, 0, 1, 2, 8])).toBe('0-3,8');
    expect(cpuList([5, 1, 3, 3])).toBe('1,3,5');
    expect(cpuList([10, 11])).toBe('10-11');
    expect(cpuList([])).toBe('');
  });
});

describe('slotCpus', () => {
  it("maps a slot's cores through its node's CPU ids", () => {
    expect(slotCpus(slot('n1', [0, 1]), CPU_IDS)).toBe('4-5');
    expect(slotCpus(slot('n2', [3, 1]), CPU_IDS)).toBe('1,3');
  });

  it('leaves unpinned a slot on an unmapped node, beyond the map, without cores, or no map', () => {
    expect(slotCpus(slot('n3', [0]), CPU_IDS)).toBe('');
    expect(slotCpus(slot('n1', [3, 4]), CPU_IDS)).toBe('');
    expect(slotCpus(slot('n1', []), CPU_IDS)).toBe('');
    expect(slotCpus(slot('n1', [0]), undefined)).toBe('');
    expect(slotCpus(undefined, CPU_IDS)).toBe('');
  });
});

describe('buildLaunch pins each rank to its slot', () => {
  it('fork: the spawner pins the process, PF_CPUS names the CPUs', () => {
    const l = launched(task({}, [slot('n1', [2, 3])]), SLURM);
    expect(l.cpus).toBe('6-7');
    expect(l.env.PF_CPUS).toBe('6-7');
  });

  it("fork unpinned: no cpus and no PF_CPUS, whatever the task's environment says", () => {
    const l = launched(task({ environment: { PF_CPUS: '9' } }, [slot('n3', [0])]), {
      ...PINNED,
      agentNode: { name: 'n3' },
      srun: { executable: 'srun' },
    });
    expect(l.cpus).toBeUndefined();
    expect(l.env).not.toHaveProperty('PF_CPUS');
    expect(launched(task({}, [slot('n1', [0])])).cpus).toBeUndefined();
  });

  it('srun and mpirun: a table with one cpulist per rank for the rank wrapper', () => {
    const slots = [slot('n2', [0, 1]), slot('n1', [2, 3]), slot('n2', [2, 3])];
    for (const opts of [SLURM, PINNED]) {
      const l = launched(task({ ranks: 3, environment: { PF_CPUS: '9' } }, slots), opts);
      expect(l.env.PF_RANK_CPUS).toBe('0-1;6-7;2-3');
      expect(l.env).not.toHaveProperty('PF_CPUS');
      expect(l.cpus).toBeUndefined();
    }
  });

  it('srun: a rank on an unmapped node gets an empty entry; no table when none is pinned', () => {
    const mixed = launched(task({ ranks: 2 }, [slot('n3', [0]), slot('n2', [1])]), SLURM);
    expect(mixed.env.PF_RANK_CPUS).toBe(';1');
    const none = launched(task({ ranks: 2 }, [slot('n3', [0]), slot('n3', [1])]), SLURM);
    expect(none.env).not.toHaveProperty('PF_RANK_CPUS');
    const noMap = { ...SLURM };
    delete noMap.cpuIds;
    const off = launched(
      task({ ranks: 2, environment: { PF_RANK_CPUS: '0;1' } }, [slot('n1', [0]), slot('n2', [0])]),
      noMap,
    );
    expect(off.env).not.toHaveProperty('PF_RANK_CPUS');
  });
});
