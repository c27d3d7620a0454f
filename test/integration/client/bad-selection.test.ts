import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '../../../src/errors';
import type { TaskState } from '../../../src/states/task-model';
import { fixtures } from '../../support/session-fixture';

describe('a wait or cancel that names what does not exist', () => {
  const fixture = fixtures();

  it('is rejected at once with the path of each bad entry, instead of waiting forever', async () => {
    const fx = await fixture.open({ cores: 1 }, false); // no pilot added: nothing would ever end
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    const bad = fx.tmgr.waitTasks({
      uids: [t!.uid, 'task.nope'],
      states: ['DONE', 'RUNNING' as TaskState],
    });
    await expect(bad).rejects.toThrow(ValidationError);
    await expect(bad).rejects.toThrow(
      '/uids/1 \'task.nope\' is not a task of this manager; /states/1 must be one of "NEW",',
    );
    await expect(fx.tmgr.waitTasks({ timeoutMs: -1 })).rejects.toThrow('/timeoutMs must be');
    await expect(fx.tmgr.cancelTasks(['task.nope'])).rejects.toThrow(
      "invalid cancelTasks arguments: /uids/0 'task.nope' is not a task of this manager",
    );
    await expect(fx.pmgr.waitPilots({ states: ['ACTIVE' as 'DONE'] })).rejects.toThrow(
      '/states/0 must be one of "NEW", "PMGR_LAUNCHING_PENDING"',
    );
    expect(() => fx.pmgr.cancelPilots(['pilot.9999'])).toThrow(
      "/uids/0 'pilot.9999' is not a pilot of this manager",
    );
    // what is right still works: the task is canceled and the wait ends
    await fx.tmgr.cancelTasks([t!.uid]);
    await fx.tmgr.waitTasks({ uids: [t!.uid], timeoutMs: 10_000 });
    expect(t!.state).toBe('CANCELED');
  }, 20_000);
});
