import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../../src/errors';
import { explained } from '../../support/explained';
import { fixtures } from '../../support/session-fixture';

describe('nothing accepted that cannot run', () => {
  const fixture = fixtures();

  it('refuses at submit a task over what one message to its agent may carry, naming the field and both sizes', async () => {
    const fx = await fixture.open({ cores: 1 });
    const arg = 'x'.repeat(100 * 1024);
    const bad = [
      { executable: '/bin/echo', arguments: Array.from({ length: 700 }, () => arg) },
      {
        mode: 'function' as const,
        function: { module: 'm', export: 'f', args: ['y'.repeat(70 * 2 ** 20)] },
      },
    ];
    const refused = await fx.tmgr.submitTasks(bad).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ValidationError);
    const issues = (refused as ValidationError).issues;
    expect(issues.map((i) => i.path)).toEqual(['/0/arguments', '/1/function/args']);
    for (const i of issues) {
      expect(i.message).toMatch(
        /^makes the task [\d,]+ bytes encoded \([a-z/]+: [\d,]+ bytes\), over the 66,060,288 bytes a task may take/,
      );
    }
    expect(fx.tmgr.list()).toEqual([]);
    // just under the limit runs: a function call whose argument is 60 MiB
    const mod = path.join(fx.session.dir, 'len.js');
    writeFileSync(mod, 'exports.len = (s) => s.length;\n');
    const big = 'z'.repeat(60 * 2 ** 20);
    const [ok] = await fx.tmgr.submitTasks([
      { mode: 'function', function: { module: mod, export: 'len', args: [big] } },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect([ok!.state, ok!.result, ok!.reason]).toEqual(['DONE', big.length, undefined]);
  }, 60_000);

  it('cancels a task the client last saw in AGENT_STAGING_INPUT_PENDING (a function call waiting at its agent)', async () => {
    const fx = await fixture.open({ cores: 1 });
    const [long] = await fx.tmgr.submitTasks([{ executable: '/bin/sleep', arguments: ['300'] }]);
    await fx.tmgr.waitTasks({ uids: [long!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 20_000 });
    const mod = path.join(fx.session.dir, 'f.js');
    writeFileSync(mod, 'exports.f = () => 1;\n');
    const [call] = await fx.tmgr.submitTasks([
      { mode: 'function', function: { module: mod, export: 'f' } },
    ]);
    await explained(fx, call!.uid, (e) => e.waiting?.component === 'AgentScheduler');
    expect(call!.state).toBe('AGENT_STAGING_INPUT_PENDING');
    await fx.tmgr.cancelTasks([call!.uid]);
    await fx.tmgr.waitTasks({ uids: [call!.uid], timeoutMs: 10_000 });
    expect([call!.state, call!.reason?.code]).toEqual(['CANCELED', 'E_CANCELED']);
    await fx.tmgr.cancelTasks();
  }, 60_000);
});
