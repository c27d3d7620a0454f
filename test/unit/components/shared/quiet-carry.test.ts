import { describe, expect, it } from '@jest/globals';
import { QuietCarry } from '../../../../src/components/shared/quiet-carry';
import { taskNotification } from '../../../../src/components/shared/transition';
import type { Notification, NotificationDetail } from '../../../../src/states/notification';
import { passedStates } from '../../../../src/states/passed';
import type { TaskState } from '../../../../src/states/task-model';

const fn = (
  uid: string,
  state: TaskState,
  ts: number,
  detail?: NotificationDetail,
  attempt = 1,
): Notification => taskNotification(uid, attempt, state, ts, 'x', detail, 'function');

describe('QuietCarry', () => {
  it('passes a bulk with nothing quiet as it is', () => {
    const ns = [fn('a', 'AGENT_STAGING_INPUT_PENDING', 1, { pilot: 'p' })];
    expect(new QuietCarry().pass(ns)).toBe(ns);
  });

  it("drops quiet states and gives their times and facts to the task's next published one, across bulks", () => {
    const q = new QuietCarry();
    expect(
      q.pass([
        fn('a', 'AGENT_STAGING_INPUT', 1),
        fn('b', 'AGENT_STAGING_INPUT', 2),
        fn('a', 'AGENT_SCHEDULING', 3),
      ]),
    ).toEqual([]);
    expect(q.size).toBe(2);
    const out = q.pass([
      fn('a', 'AGENT_STAGING_OUTPUT_PENDING', 5, {
        exitCode: 0,
        signal: null,
        slots: [{ node: 'n', cores: [1], gpus: [] }],
        launched: 4,
        exited: 4.5,
      }),
      fn('a', 'TMGR_STAGING_OUTPUT_PENDING', 6, { exitCode: 0, signal: null, stdout: 'x' }),
    ]);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ uid: 'a', state: 'TMGR_STAGING_OUTPUT_PENDING', ts: 6 });
    expect(out[0]!.detail).toEqual({
      exitCode: 0,
      signal: null,
      stdout: 'x',
      slots: [{ node: 'n', cores: [1], gpus: [] }],
      launched: 4,
      exited: 4.5,
      passed: [6, 5, 8, 3, 11, 1], // [state code, ms before 6]
    });
    expect(passedStates(out[0]!)).toEqual([
      ['AGENT_STAGING_INPUT', 1],
      ['AGENT_SCHEDULING', 3],
      ['AGENT_STAGING_OUTPUT_PENDING', 5],
    ]);
    expect(q.size).toBe(1); // b's still waits for its next published state
    const [failed] = q.pass([
      fn('b', 'FAILED', 9, { reason: { code: 'E_CANCELED', message: 'm', component: 'c' } }),
    ]);
    expect(passedStates(failed!)).toEqual([['AGENT_STAGING_INPUT', 2]]);
    expect(q.size).toBe(0);
  });

  it("does not give an older attempt's times to a newer attempt", () => {
    const q = new QuietCarry();
    q.pass([fn('a', 'AGENT_SCHEDULING', 1, undefined, 1)]);
    const [n] = q.pass([fn('a', 'TMGR_SCHEDULING_PENDING', 2, { retried: 1 }, 2)]);
    expect(n!.detail).toEqual({ retried: 1 });
    expect(q.size).toBe(0);
  });

  it('leaves an executable task, which has no quiet states, alone', () => {
    const q = new QuietCarry();
    const n = taskNotification('e', 1, 'AGENT_SCHEDULING', 1, 'x', undefined, 'executable');
    expect(q.pass([n])).toEqual([n]);
    expect(n.detail).toBeUndefined();
  });
});
