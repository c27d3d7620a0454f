import { describe, expect, it } from '@jest/globals';
import { runCli } from '../../support/cli';
import { fixtures } from '../../support/session-fixture';
import { cliFollowGatedPrinter } from '../../support/tail-check';
import { tempDirs } from '../../support/temp-dirs';

describe('pilotfish tail', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-cli-tail-');

  it.each(['stream', 'files'] as const)(
    "output '%s': -f prints a running task's lines as they come and ends with the task; later, all of them",
    async (output) => {
      const fx = await fixture.open({ agent: { output } });
      const args = await cliFollowGatedPrinter(fx, temp.make());
      // the session closed: a finished session reads the same, stderr too
      await fx.session.close();
      const all = 'first\nsecond\nthird\npartial\n';
      expect(await runCli(['tail', ...args])).toEqual({ code: 0, stdout: all, stderr: '' });
      expect((await runCli(['tail', ...args, '--stderr'])).stdout).toBe('oops\n');
      expect((await runCli(['tail', ...args, '-f'])).stdout).toBe(all);
    },
    120_000,
  );

  it('an unknown task: a message and exit 1; an unknown session: exit 2', async () => {
    const fx = await fixture.open();
    const r = await runCli(['tail', fx.session.uid, 'task.999999', '--dir', fx.dir]);
    expect([r.code, r.stdout]).toEqual([1, '']);
    expect(r.stderr).toBe(`pilotfish tail: no task 'task.999999' in session ${fx.session.uid}\n`);
    const s = await runCli(['tail', 'pf.20200101.000000.abcdef', 'task.000000', '--dir', fx.dir]);
    expect(s.code).toBe(2);
    expect(s.stderr).toMatch(/no session 'pf\.20200101\.000000\.abcdef'/);
  }, 60_000);
});
