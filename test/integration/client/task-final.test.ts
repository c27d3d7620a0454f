import { describe, expect, it } from '@jest/globals';
import { runtimeOf } from '../../../src/client/runtime/runtime';
import type { TaskFinal } from '../../../src/states/task-final';
import { isFinalTaskState, type TaskState } from '../../../src/states/task-model';
import { fixtures } from '../../support/session-fixture';

describe('the task-final event', () => {
  const fixture = fixtures();

  it('reaches the client components once per task, wherever the end was decided, in store order', async () => {
    const fx = await fixture.open({ cores: 1 }, false);
    const runtime = runtimeOf(fx.session);
    const heard: TaskFinal[] = [];
    runtime.pipeline.onTasksFinal((fs) => heard.push(...fs));
    const decidedBy = new Map<string, string>();
    // the event comes after the callback of the same final state, never before (callbacks
    // that throw are only logged: record, assert later)
    const heardTooEarly: string[] = [];
    fx.tmgr.onState((task, state) => {
      if (isFinalTaskState(state) && heard.some((f) => f.uid === task.uid)) {
        heardTooEarly.push(task.uid);
      }
    });

    // canceled in the client, before any pilot was added: the ManagerScheduler decides
    const [early] = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    await fx.tmgr.cancelTasks([early!.uid]);
    fx.tmgr.addPilots([fx.pilot]);
    const [done, exit3, sleeper, huge] = await fx.tmgr.submitTasks([
      { executable: '/bin/true' }, // DONE: the ManagerOutputStager decides
      { executable: '/bin/sh', arguments: ['-c', 'exit 3'] }, // FAILED there too
      { executable: '/bin/sleep', arguments: ['30'] }, // CANCELED by the Executor, in the agent
      { executable: '/bin/true', memPerRankMb: 2 ** 30 }, // FAILED by the AgentScheduler
    ]);
    await fx.tmgr.waitTasks({
      uids: [sleeper!.uid],
      states: ['AGENT_EXECUTING'],
      timeoutMs: 20_000,
    });
    await fx.tmgr.cancelTasks([sleeper!.uid]);
    await fx.tmgr.waitTasks({ timeoutMs: 20_000 });

    for (const t of fx.tmgr.list()) {
      const n = (await runtime.store.history(t.uid)).find((x) =>
        isFinalTaskState(x.state as TaskState),
      );
      decidedBy.set(t.uid, `${t.state} by ${n?.component}`);
    }
    expect(Object.fromEntries(decidedBy)).toEqual({
      [early!.uid]: 'CANCELED by ManagerScheduler',
      [done!.uid]: 'DONE by ManagerOutputStager',
      [exit3!.uid]: 'FAILED by ManagerOutputStager',
      [sleeper!.uid]: 'CANCELED by Executor',
      [huge!.uid]: 'FAILED by AgentScheduler',
    });
    // once each, with the state and attempt the store holds, in the store's order
    const finalsInStore = (await runtime.store.history())
      .filter((n) => n.kind === 'task' && isFinalTaskState(n.state as TaskState))
      .map((n) => `${n.uid} ${n.state}@${n.attempt}`);
    expect(heard.map((f) => `${f.uid} ${f.state}@${f.attempt}`)).toEqual(finalsInStore);
    expect(heardTooEarly).toEqual([]);
    expect(heard.find((f) => f.uid === huge!.uid)?.reason?.code).toBe('E_NEVER_FITS');
    expect(heard.find((f) => f.uid === sleeper!.uid)?.pilot).toBe(fx.pilot.uid);
  }, 40_000);
});
