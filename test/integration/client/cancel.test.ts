import { describe, expect, it } from '@jest/globals';
import { TASK_STATES } from '../../../src/states/task-model';
import { fixtures } from '../../support/session-fixture';

const NON_FINAL = TASK_STATES.slice(0, TASK_STATES.indexOf('DONE'));
// Up to AGENT_EXECUTING a running `sleep 30` is still ahead, so a cancel must win.
const BEFORE_EXIT = NON_FINAL.slice(1, NON_FINAL.indexOf('AGENT_EXECUTING') + 1);
// After the exit the task races its cancel: either outcome is right, but exactly one.
const AFTER_EXIT = NON_FINAL.slice(NON_FINAL.indexOf('AGENT_EXECUTING') + 1);

describe('cancellation', () => {
  const fixture = fixtures();

  it.each(BEFORE_EXIT)(
    'cancels a task the client saw in %s',
    async (target) => {
      const fx = await fixture.open({ cores: 4 });
      const f = fx;
      f.tmgr.onState((t, state) => {
        if (state === target) void f.tmgr.cancelTasks([t.uid]);
      });
      const [t] = await f.tmgr.submitTasks([{ executable: '/bin/sleep', arguments: ['30'] }]);
      await f.tmgr.waitTasks({ timeoutMs: 15_000 });
      expect(t!.state).toBe('CANCELED');
      expect(t!.reason?.code).toBe('E_CANCELED');
      expect(t!.history.map((h) => h.state)).toContain(target);
    },
    20_000,
  );

  it.each(AFTER_EXIT)(
    'a cancel when the client sees %s ends the task CANCELED or DONE, once',
    async (target) => {
      const fx = await fixture.open();
      const f = fx;
      const finals: string[] = [];
      f.tmgr.onState((t, state) => {
        if (state === target) void f.tmgr.cancelTasks([t.uid]);
        if (t.final) finals.push(state);
      });
      const [t] = await f.tmgr.submitTasks([{ executable: '/bin/true' }]);
      await f.tmgr.waitTasks({ timeoutMs: 10_000 });
      expect(['CANCELED', 'DONE']).toContain(t!.state);
      expect(finals).toEqual([t!.state]);
    },
  );

  it('cancels a task right after submit (NEW), and one waiting for a pilot', async () => {
    const fx = await fixture.open({}, false); // pilot not added: the task waits in TMGR_SCHEDULING
    const [early] = await fx.tmgr.submitTasks([{ executable: '/bin/sleep', arguments: ['30'] }]);
    await fx.tmgr.cancelTasks([early!.uid]);
    const [waiting] = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    await fx.tmgr.waitTasks({
      uids: [waiting!.uid],
      states: ['TMGR_SCHEDULING'],
      timeoutMs: 5_000,
    });
    await fx.tmgr.cancelTasks([waiting!.uid]);
    await fx.tmgr.waitTasks({ timeoutMs: 10_000 });
    expect(early!.state).toBe('CANCELED');
    expect(waiting!.state).toBe('CANCELED');
    expect(waiting!.history.at(-2)?.state).toBe('TMGR_SCHEDULING');
  });

  it('cancels tasks waiting for cores and running ones, and kills their processes', async () => {
    const fx = await fixture.open({ cores: 1 });
    const tasks = await fx.tmgr.submitTasks([
      { executable: '/bin/sleep', arguments: ['30'] },
      { executable: '/bin/sleep', arguments: ['30'] },
    ]);
    await fx.tmgr.waitTasks({
      uids: [tasks[0]!.uid],
      states: ['AGENT_EXECUTING'],
      timeoutMs: 10_000,
    });
    await fx.tmgr.waitTasks({
      uids: [tasks[1]!.uid],
      states: ['AGENT_SCHEDULING'],
      timeoutMs: 10_000,
    });
    const t0 = Date.now();
    await fx.tmgr.cancelTasks();
    await fx.tmgr.waitTasks({ timeoutMs: 10_000 });
    expect(Date.now() - t0).toBeLessThan(3_000); // SIGTERM ended sleep; no grace-period wait
    expect(tasks.map((t) => t.state)).toEqual(['CANCELED', 'CANCELED']);
    expect(tasks[1]!.history.map((h) => h.state)).not.toContain('AGENT_EXECUTING');
  }, 20_000);

  it('canceling the pilot cancels its tasks and ends the pilot CANCELED', async () => {
    const fx = await fixture.open({ cores: 1 });
    const tasks = await fx.tmgr.submitTasks([
      { executable: '/bin/sleep', arguments: ['30'] },
      { executable: '/bin/sleep', arguments: ['30'] },
    ]);
    await fx.tmgr.waitTasks({
      uids: [tasks[0]!.uid],
      states: ['AGENT_EXECUTING'],
      timeoutMs: 10_000,
    });
    fx.pmgr.cancelPilots();
    await fx.pmgr.waitPilots({ timeoutMs: 10_000 });
    await fx.tmgr.waitTasks({ timeoutMs: 10_000 });
    expect(fx.pilot.state).toBe('CANCELED');
    expect(tasks.map((t) => t.state)).toEqual(['CANCELED', 'CANCELED']);
    // a task submitted after the pilot ended fails with the reason instead of hanging
    const [late] = await fx.tmgr.submitTasks([{ executable: '/bin/true', pilot: fx.pilot.uid }]);
    await fx.tmgr.waitTasks({ uids: [late!.uid], timeoutMs: 5_000 });
    expect(late!.state).toBe('FAILED');
    expect(late!.reason?.message).toContain('has ended');
  }, 30_000);

  it('ends the pilot DONE at its runtime limit and fails the tasks it still ran', async () => {
    const fx = await fixture.open({ cores: 1, runtimeMin: 0.03 });
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/sleep', arguments: ['30'] }]);
    await fx.pmgr.waitPilots({ timeoutMs: 15_000 });
    await fx.tmgr.waitTasks({ timeoutMs: 5_000 });
    expect(fx.pilot.state).toBe('DONE');
    expect(fx.pilot.reason?.message).toContain('runtime limit');
    expect(t!.state).toBe('FAILED');
    expect(t!.reason?.code).toBe('E_PILOT_ENDED');
  }, 25_000);
});
