import { writeFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../../src/errors';
import type { TaskDescription } from '../../../src/generated';
import { fixtures } from '../../support/session-fixture';

/** What a script may pass by mistake: instances the schema alone sees as empty objects. */
const smuggled = (v: unknown): TaskDescription => v as TaskDescription;

describe('descriptions are checked as plain JSON data at submit', () => {
  const fixture = fixtures();

  it('refuses a Map, RegExp or Date naming its path, and takes nothing of the call', async () => {
    const fx = await fixture.open({ cores: 1 });
    const bad = fx.tmgr.submitTasks([
      smuggled({ executable: '/bin/true', environment: new Map([['A', 'b']]) }),
      smuggled({ executable: '/bin/true', tags: /colocate/ }),
      smuggled({ mode: 'service', executable: '/bin/true', service: /x/ }),
      smuggled({ executable: '/bin/true', environment: { A: new Date(0) } }),
      smuggled({ executable: '/bin/true', arguments: ['a', undefined] }),
      smuggled({ executable: '/bin/true', priority: NaN }),
    ]);
    await expect(bad).rejects.toThrow(ValidationError);
    const issues = await bad.catch((e: ValidationError) => e.issues);
    expect(issues).toEqual([
      { path: '/0/environment', message: 'must be JSON data (a Map is not)' },
      { path: '/1/tags', message: 'must be JSON data (a RegExp is not)' },
      { path: '/2/service', message: 'must be JSON data (a RegExp is not)' },
      { path: '/3/environment/A', message: 'must be JSON data (a Date is not)' },
      { path: '/4/arguments/1', message: 'must be JSON data (undefined is not: use null)' },
      { path: '/5/priority', message: 'must be a finite number (NaN is not JSON)' },
    ]);
    expect(fx.tmgr.list()).toEqual([]);
    // the plain forms run, and a function's arguments may carry bytes and dates
    const mod = `${fx.session.dir}/args.js`;
    writeFileSync(
      mod,
      'exports.kinds = (b, d) => [Buffer.isBuffer(b) || b instanceof Uint8Array, d instanceof Date];\n',
    );
    const [env, fn] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'test "$A" = b'], environment: { A: 'b' } },
      {
        mode: 'function',
        function: { module: mod, export: 'kinds', args: [Buffer.from('x'), new Date(0)] },
      },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
    expect([env!.state, fn!.state, fn!.result]).toEqual(['DONE', 'DONE', [true, true]]);
  }, 30_000);
});
