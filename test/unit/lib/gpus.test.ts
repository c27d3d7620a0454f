import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { nvidiaGpus } from '../../../src/lib/gpus';

describe('nvidiaGpus', () => {
  it('counts the GPUs the driver lists, one directory each, and is 0 without the driver', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-gpus-'));
    try {
      for (const bus of ['0000:01:00.0', '0000:41:00.0', '0000:81:00.0']) {
        fs.mkdirSync(path.join(dir, bus));
      }
      expect(nvidiaGpus(dir)).toBe(3);
      expect(nvidiaGpus(path.join(dir, 'absent'))).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
