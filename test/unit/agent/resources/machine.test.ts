import { afterAll, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  cpuIdsFor,
  nvidiaGpus,
  parseCpuList,
  resourceWarnings,
  usableCpus,
} from '../../../../src/agent/resources/machine';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-machine-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the machine the agent runs on', () => {
  it('parses a cpulist as Linux writes it', () => {
    expect(parseCpuList('0-3,8')).toEqual([0, 1, 2, 3, 8]);
    expect(parseCpuList('5')).toEqual([5]);
    expect(parseCpuList('2,0-1')).toEqual([0, 1, 2]);
    for (const bad of ['', '3-1', 'a', '1,,2', '0-']) expect(parseCpuList(bad)).toEqual([]);
  });

  it('may use the CPUs of Cpus_allowed_list, else every CPU os.cpus() counts', () => {
    const status = path.join(dir, 'status');
    fs.writeFileSync(status, 'Name:\tnode\nCpus_allowed:\t0c\nCpus_allowed_list:\t2-3\n');
    expect(usableCpus(status)).toEqual([2, 3]);
    const all = Array.from({ length: os.cpus().length }, (_, i) => i);
    expect(usableCpus(path.join(dir, 'missing'))).toEqual(all);
  });

  it('counts the GPUs the NVIDIA driver lists, none without the driver', () => {
    const gpus = path.join(dir, 'gpus');
    fs.mkdirSync(gpus);
    for (const id of ['0000:17:00.0', '0000:65:00.0']) fs.mkdirSync(path.join(gpus, id));
    expect(nvidiaGpus(gpus)).toBe(2);
    expect(nvidiaGpus(path.join(dir, 'no-driver'))).toBe(0);
  });
});

describe('cpuIdsFor', () => {
  it('maps core i of every node that fits the machine to its i-th CPU, no other node', () => {
    const machine = { cpus: [2, 3, 6, 7], gpus: 0 };
    const ids = cpuIdsFor(
      [
        { name: 'n1', cores: 4, gpus: 0, memMb: 1 },
        { name: 'n2', cores: 2, gpus: 0, memMb: 1 },
        { name: 'n3', cores: 8, gpus: 0, memMb: 1 },
      ],
      machine,
    );
    expect([...ids.keys()]).toEqual(['n1', 'n2']);
    expect(ids.get('n1')).toEqual([2, 3, 6, 7]);
  });
});

describe('resourceWarnings', () => {
  const node = { name: 'box', cores: 2, gpus: 0, memMb: 1 };
  const machine = { cpus: [0, 1], gpus: 0 };

  it('says nothing when the pilot fits the machine', () => {
    expect(resourceWarnings(node, machine)).toEqual([]);
    expect(resourceWarnings(undefined, machine)).toEqual([]);
  });

  it('names the cores and GPUs a pilot declares beyond the machine', () => {
    expect(resourceWarnings({ ...node, cores: 8, gpus: 2 }, machine)).toEqual([
      'the pilot declares 8 cores on box, but the agent may use 2 CPUs there (0-1): tasks share CPUs, and their ranks are not pinned',
      'the pilot declares 2 GPUs on box, but the NVIDIA driver lists none (/proc/driver/nvidia/gpus): tasks get GPU indices the machine may not have',
    ]);
    expect(resourceWarnings({ ...node, gpus: 4 }, { cpus: [3], gpus: 1 })).toEqual([
      'the pilot declares 2 cores on box, but the agent may use 1 CPU there (3): tasks share CPUs, and their ranks are not pinned',
      'the pilot declares 4 GPUs on box, but the NVIDIA driver lists 1: tasks get GPU indices the machine may not have',
    ]);
  });
});
