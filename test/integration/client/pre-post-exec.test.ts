import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fixtures } from '../../support/session-fixture';

/** Arguments a re-quoting bug would mangle. */
const AWKWARD = ['a b', `it's "quoted"`, '$HOME', '`id`', '*', '', 'x\ny', '\\n', '-e'];

describe('preExec and postExec, end to end through a local pilot', () => {
  const fixture = fixtures();

  it('run in the task’s shell and end each task with the reason of what failed', async () => {
    const fx = await fixture.open();
    const [env, preFails, exeFails, postFails] = await fx.tmgr.submitTasks([
      {
        executable: '/bin/sh',
        arguments: ['-c', 'printf "[%s]" "$FOO" "$@"', 'x', ...AWKWARD],
        preExec: ['export FOO=bar'],
        postExec: ['echo; echo "post $FOO"'],
      },
      {
        executable: '/bin/touch',
        arguments: ['ran'],
        preExec: ['module-that-is-not-there load gcc'],
        postExec: ['touch post'],
      },
      {
        executable: '/bin/sh',
        arguments: ['-c', 'echo exe broke >&2; exit 3'],
        postExec: ['touch post'],
      },
      { executable: '/bin/touch', arguments: ['ran'], postExec: ['exit 2'] },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    const has = (sandbox: string | undefined, name: string) =>
      fs.existsSync(path.join(sandbox!, name));

    expect([env!.state, env!.exitCode]).toEqual(['DONE', 0]);
    expect(env!.stdout).toBe(`${['bar', ...AWKWARD].map((a) => `[${a}]`).join('')}\npost bar\n`);

    expect(preFails!.state).toBe('FAILED');
    expect(preFails!.exitCode).toBe(127);
    expect(preFails!.reason).toEqual({
      code: 'E_PRE_EXEC',
      message:
        "preExec[0] 'module-that-is-not-there load gcc' failed with exit code 127: the executable did not run",
      component: 'Executor',
      detail: { exitCode: 127, preExec: 0, line: 'module-that-is-not-there load gcc' },
    });
    expect(preFails!.stderr).toContain('module-that-is-not-there: not found');
    expect([has(preFails!.sandbox, 'ran'), has(preFails!.sandbox, 'post')]).toEqual([false, false]);

    expect([exeFails!.state, exeFails!.exitCode]).toEqual(['FAILED', 3]);
    expect(exeFails!.reason).toMatchObject({
      code: 'E_EXIT_CODE',
      message: 'task exited with code 3: exe broke',
    });
    expect(has(exeFails!.sandbox, 'post')).toBe(true);

    expect([postFails!.state, postFails!.exitCode]).toEqual(['FAILED', 2]);
    expect(postFails!.reason).toMatchObject({
      code: 'E_POST_EXEC',
      message: "postExec[0] 'exit 2' failed with exit code 2",
      component: 'Executor',
    });
    expect(has(postFails!.sandbox, 'ran')).toBe(true);
  }, 40_000);
});
