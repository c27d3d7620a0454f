import { describe, expect, it } from '@jest/globals';
import { localAllocation } from '../../../../src/agent/resources/local-allocation';
import { linesLogger } from '../../../support/lines-logger';
import { site } from './allocation-fixtures';

describe('localAllocation', () => {
  it("is one node named by the host, with the config's cores and GPUs and the machine's memory", () => {
    const a = localAllocation(site({ cores: 4, gpus: 1 }));
    expect(a.node).toBe('box');
    expect(a.nodes).toEqual([{ name: 'box', cores: 4, gpus: 1, memMb: 8192 }]);
  });

  it("gives tasks the config's memory when it names some", () => {
    expect(localAllocation(site({ memMb: 1000 })).nodes[0]!.memMb).toBe(1000);
  });

  it('ignores a batch job it may have been started inside', () => {
    const env = { SLURMD_NODENAME: 'n1', SLURM_JOB_NODELIST: 'n[1-4]', SLURM_JOB_ID: '42' };
    const a = localAllocation(site({}, env));
    expect(a.node).toBe('box');
    expect(a.nodes.map((n) => n.name)).toEqual(['box']);
  });

  it('has no end of its own, no step launcher, and runs nothing to say so', async () => {
    const a = localAllocation(site());
    const warned: string[] = [];
    await expect(a.jobEnd((m) => warned.push(m))).resolves.toBeUndefined();
    const log = linesLogger();
    await expect(a.launch({ log, timeoutMs: 1 })).resolves.toEqual({ options: {}, warnings: [] });
    expect(warned).toEqual([]);
    expect(log.lines).toEqual([]);
  });
});
