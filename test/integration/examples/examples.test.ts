import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { tempDirs } from '../../support/temp-dirs';

const DIST = path.join(__dirname, '../../../dist/examples');

/** The examples README and the user guide point at run as a user runs them, and say so. */
describe('examples', () => {
  const temp = tempDirs('pf-example-');

  const run = (file: string): Promise<{ code: number | null; out: string }> =>
    new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        [path.join(DIST, file)],
        { cwd: temp.make(), timeout: 120_000 },
        (err, stdout, stderr) =>
          resolve({ code: err === null ? 0 : (child.exitCode ?? -1), out: stdout + stderr }),
      );
    });

  it('skeleton.js ends with every task as expected', async () => {
    const { code, out } = await run('skeleton.js');
    expect([code, out]).toEqual([0, expect.stringContaining('all tasks ended as expected')]);
  }, 150_000);

  it('inference-service.js serves 200 calls from its model', async () => {
    const { code, out } = await run('inference-service.js');
    expect([code, out]).toEqual([0, expect.stringContaining('all tasks ended as expected')]);
    expect(out).toMatch(/model serving at 127\.0\.0\.1:\d+/);
    expect(out).toContain('predictions: { positive: 133, negative: 67 }');
    expect(out).toContain('model DONE');
  }, 150_000);
});
