import { describe, expect, it } from '@jest/globals';
import type { TaskHistoryEntry } from '../../../src/client/task';
import type { Notification } from '../../../src/states/notification';
import { STATE_CODES } from '../../../src/states/state-codes';
import { withStoredTimes } from '../../../src/service/views';

// A task's history for its page: the tracker inferred the states whose notifications came after
// its final one; the store still has their times (their own, or carried in `detail.passed`).

const note = (state: string, ts: number, attempt = 1, passed?: number[]): Notification =>
  ({
    kind: 'task',
    uid: 't',
    attempt,
    state,
    ts,
    component: 'X',
    ...(passed !== undefined ? { detail: { passed } } : {}),
  }) as Notification;

describe('withStoredTimes', () => {
  const history: TaskHistoryEntry[] = [
    { state: 'NEW', attempt: 1, inferred: false, ts: 100 },
    { state: 'AGENT_SCHEDULING', attempt: 1, inferred: true },
    { state: 'AGENT_EXECUTING_PENDING', attempt: 1, inferred: true },
    { state: 'AGENT_EXECUTING', attempt: 1, inferred: true },
    { state: 'FAILED', attempt: 1, inferred: false, ts: 180 },
  ];

  it('gives an inferred state the time the store has of it, its own or carried', () => {
    // AGENT_EXECUTING_PENDING, 7 ms before the notification that carries it
    const passed = [STATE_CODES.indexOf('AGENT_EXECUTING_PENDING'), 7];
    const stored = [
      note('NEW', 100),
      note('FAILED', 180),
      note('AGENT_SCHEDULING', 120), // late: after FAILED in store order
      note('AGENT_EXECUTING', 140, 1, passed),
    ];
    expect(withStoredTimes(history, stored)).toEqual([
      { state: 'NEW', attempt: 1, inferred: false, ts: 100 },
      { state: 'AGENT_SCHEDULING', attempt: 1, inferred: false, ts: 120 },
      { state: 'AGENT_EXECUTING_PENDING', attempt: 1, inferred: false, ts: 133 },
      { state: 'AGENT_EXECUTING', attempt: 1, inferred: false, ts: 140 },
      { state: 'FAILED', attempt: 1, inferred: false, ts: 180 },
    ]);
  });

  it("leaves inferred what the store has not, and never takes another attempt's time", () => {
    const out = withStoredTimes(history, [note('AGENT_SCHEDULING', 50, 2)]);
    expect(out).toEqual(history);
  });

  it('keeps a time the tracker has, whatever the store says', () => {
    const out = withStoredTimes(history, [note('NEW', 999), note('FAILED', 999)]);
    expect(out[0]!.ts).toBe(100);
    expect(out[4]!.ts).toBe(180);
  });
});
