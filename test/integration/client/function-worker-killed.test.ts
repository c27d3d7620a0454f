import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fixtures } from '../../support/session-fixture';
import { pidWritten } from '../../support/pid-file';
import { tempDirs } from '../../support/temp-dirs';

/**
 * What a function call meets when its worker is killed from outside (kill -9) mid-call: what
 * docs/functions.md and docs/function-workers.md say. A call blocks its worker (sync), writing
 * the worker's pid first; run again, it returns at once.
 */
const MODULE = `
const fs = require('node:fs');
exports.block = (dir) => {
  const pid = dir + '/pid';
  if (fs.existsSync(pid)) return 'ran again';
  fs.writeFileSync(pid, process.pid + '\\n');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);
  return 'not killed';
};
exports.quick = (dir, i) => { fs.appendFileSync(dir + '/ran', i + '\\n'); return i; };
`;

describe('a function worker killed by a signal mid-call', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-fn-killed-');

  it('with calls queued behind it: every unanswered call runs again in the replacement, none fails', async () => {
    const dir = temp.make();
    const mod = path.join(dir, 'm.js');
    fs.writeFileSync(mod, MODULE);
    const fx = await fixture.open({ cores: 1 });
    const [block, ...quick] = await fx.tmgr.submitTasks([
      { mode: 'function', function: { module: mod, export: 'block', args: [dir] } },
      ...Array.from({ length: 5 }, (_, i) => ({
        mode: 'function' as const,
        function: { module: mod, export: 'quick', args: [dir, i] },
      })),
    ]);
    const pid = await pidWritten(dir, 'pid', 20_000);
    process.kill(pid, 'SIGKILL');
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    // the killed call is not failed: it runs again (and could have run twice had it finished)
    expect([block!.state, block!.result, block!.reason]).toEqual(['DONE', 'ran again', undefined]);
    expect(quick.map((t) => [t.state, t.result])).toEqual([0, 1, 2, 3, 4].map((i) => ['DONE', i]));
    const ran = fs.readFileSync(path.join(dir, 'ran'), 'utf8').trim().split('\n').map(Number);
    expect(ran.sort()).toEqual([0, 1, 2, 3, 4]);

    // alone in its worker, the call killed is the one lost: FAILED E_WORKER_DIED
    const alone = temp.make();
    const [lone] = await fx.tmgr.submitTasks([
      { mode: 'function', function: { module: mod, export: 'block', args: [alone] } },
    ]);
    process.kill(await pidWritten(alone, 'pid', 20_000), 'SIGKILL');
    await fx.tmgr.waitTasks({ uids: [lone!.uid], timeoutMs: 30_000 });
    expect([lone!.state, lone!.reason?.code]).toEqual(['FAILED', 'E_WORKER_DIED']);
    expect(lone!.reason?.message).toContain('SIGKILL');
  }, 60_000);
});
