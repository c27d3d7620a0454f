import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import type { TaskDescription } from '../../../src/generated';
import { TASK_STATES } from '../../../src/states/task-model';
import { gone } from '../../support/dir-entries';
import { fixtures } from '../../support/session-fixture';

const ORDER = TASK_STATES.slice(0, TASK_STATES.indexOf('DONE') + 1);

describe('a local pilot runs tasks end to end', () => {
  const fixture = fixtures();

  it('delivers every state of every task exactly once, in model order, and ends DONE', async () => {
    const fx = await fixture.open();
    const seen = new Map<string, string[]>();
    fx.tmgr.onState((t, state) => seen.set(t.uid, [...(seen.get(t.uid) ?? []), state]));
    const pilotStates: string[] = [];
    fx.pmgr.onState((_p, s) => pilotStates.push(s));
    const tasks = await fx.tmgr.submitTasks(
      Array.from({ length: 200 }, (_, i) => ({
        executable: '/bin/echo',
        arguments: [`hello ${i}`],
      })),
    );
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    for (const t of tasks) {
      expect(t.state).toBe('DONE');
      expect(seen.get(t.uid)).toEqual(ORDER);
      expect(t.exitCode).toBe(0);
      expect(t.pilot).toBe(fx.pilot.uid);
    }
    expect(tasks[7]!.stdout).toBe('hello 7\n');
    expect(pilotStates).toEqual([
      'NEW',
      'PMGR_LAUNCHING_PENDING',
      'PMGR_LAUNCHING',
      'PMGR_ACTIVE_PENDING',
      'PMGR_ACTIVE',
    ]);
    // how its agent's start went, phase by phase, each done after the one before
    const phases = ['process', 'config', 'store', 'resources', 'helpers', 'control', 'ready'];
    const startup = fx.pilot.startup!;
    expect(Object.keys(startup)).toEqual(expect.arrayContaining(phases));
    const at = phases.map((p) => startup[p as keyof typeof startup]!);
    expect(at[0]).toBeGreaterThan(0);
    expect(at).toEqual([...at].sort((a, b) => a - b));
  }, 40_000);

  it.each<[string, Pick<TaskDescription, 'output' | 'sandbox' | 'workdir'>, boolean, boolean]>([
    ['streams (the default): its own, removed after as it stayed empty', {}, true, false],
    ["output 'files': its own, which keeps them", { output: 'files' }, true, true],
    ['streams, and asks for its own (kept)', { sandbox: true }, true, true],
    [
      "streams in workdir 'pilot': the pilot sandbox, made for no task",
      { workdir: 'pilot' },
      false,
      false,
    ],
  ])(
    'gives the task its environment and sandbox: %s',
    async (_what, extra, own, kept) => {
      const fx = await fixture.open();
      const [t] = await fx.tmgr.submitTasks([
        {
          uid: 'env-check',
          executable: '/bin/sh',
          arguments: [
            '-c',
            'echo "$PF_TASK_ID $PF_PILOT_ID $PF_SESSION_ID $GREETING"; pwd; echo "$PF_TASK_SANDBOX"',
          ],
          environment: { GREETING: 'hi' },
          ...extra,
        },
      ]);
      await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
      expect(t!.state).toBe('DONE');
      const [line1, line2, line3] = t!.stdout!.trim().split('\n');
      expect(line1).toBe(`env-check ${fx.pilot.uid} ${fx.session.uid} hi`);
      const pilotSandbox = `${fx.session.dir}/${fx.pilot.uid}`;
      const sandbox = own ? `${pilotSandbox}/env-check` : pilotSandbox;
      expect([t!.sandbox, line2, line3]).toEqual([sandbox, sandbox, sandbox]);
      expect(t!.output).toBe(extra.output ?? 'stream');
      // an empty one is removed in the background, once the task ended
      if (!kept) await gone([`${pilotSandbox}/env-check`], 10_000);
      expect(existsSync(`${pilotSandbox}/env-check`)).toBe(kept);
    },
    30_000,
  );

  it('fails tasks with a reason a person can act on', async () => {
    const fx = await fixture.open();
    const [exit3, missing, slow] = await fx.tmgr.submitTasks([
      { executable: '/bin/sh', arguments: ['-c', 'echo broken pipe >&2; exit 3'] },
      { executable: '/no/such/program' },
      { executable: '/bin/sleep', arguments: ['30'], timeoutS: 0.5 },
    ]);
    await fx.tmgr.waitTasks({ timeoutMs: 20_000 });
    expect(exit3!.state).toBe('FAILED');
    expect(exit3!.exitCode).toBe(3);
    expect(exit3!.reason?.message).toBe('task exited with code 3: broken pipe');
    expect(missing!.state).toBe('FAILED');
    expect(missing!.reason?.code).toBe('E_EXEC_NOT_FOUND');
    expect(missing!.reason?.message).toContain("'/no/such/program'");
    expect(slow!.state).toBe('FAILED');
    expect(slow!.reason?.code).toBe('E_TASK_TIMEOUT');
    expect(slow!.signal).toBe('SIGTERM');
  }, 30_000);

  it('fails a task that can never fit at once, with the sizes', async () => {
    const fx = await fixture.open();
    const [big] = await fx.tmgr.submitTasks([{ executable: '/bin/true', coresPerRank: 64 }]);
    await fx.tmgr.waitTasks({ timeoutMs: 10_000 });
    expect(big!.state).toBe('FAILED');
    expect(big!.reason?.code).toBe('E_NEVER_FITS');
    expect(big!.reason?.message).toContain('64 cores');
    expect(big!.reason?.message).toContain('2 cores');
  });

  it('rejects invalid descriptions with their paths and submits nothing', async () => {
    const fx = await fixture.open();
    const bad = [
      { executable: '/bin/true' },
      { executable: '/bin/true', arguments: ['ok', 7], colour: 'red' },
    ] as unknown as Parameters<typeof fx.tmgr.submitTasks>[0];
    await expect(fx.tmgr.submitTasks(bad)).rejects.toMatchObject({
      code: 'E_VALIDATION',
      issues: expect.arrayContaining([
        { path: '/1/arguments/1', message: 'must be string' },
        { path: '/1', message: "must not have property 'colour'" },
      ]) as unknown,
    });
    expect(fx.tmgr.list()).toEqual([]);
    await expect(fx.pmgr.submitPilots([{ resource: 'cloud' } as never])).rejects.toThrow(
      /\/0\/resource must be one of "local"/,
    );
  });
});
