import { describe, expect, it } from '@jest/globals';
import { HeldStarts } from '../../../src/agent/held-starts';
import { taskNotification } from '../../../src/components/shared/transition';
import type { Notification, NotificationDetail } from '../../../src/states/notification';
import { START_HOLD_MS } from '../../../src/states/quiet-states';
import { STATE_CODES } from '../../../src/states/state-codes';
import { COMPONENTS, type TaskState } from '../../../src/states/task-model';
import { FakeClock } from '../../support/fake-clock';

const C = COMPONENTS;
/** A notification of a task of `mode` entering `state`, as its owner in the agent makes it. */
const note = (
  uid: string,
  state: TaskState,
  mode: 'function' | 'executable' = 'function',
  attempt = 1,
): Notification => {
  const detail =
    state === 'TMGR_STAGING_OUTPUT_PENDING' ? { exitCode: 0, signal: null } : undefined;
  const owner = state === 'TMGR_STAGING_OUTPUT_PENDING' ? C.agentOutputStager : C.executor;
  return taskNotification(uid, attempt, state, 0, owner, detail, mode);
};
const states = (ns: readonly Notification[]): string[] => ns.map((n) => `${n.uid}:${n.state}`);

function held(): { starts: HeldStarts; clock: FakeClock; released: Notification[][] } {
  const clock = new FakeClock();
  const released: Notification[][] = [];
  return { starts: new HeldStarts(clock, (ns) => released.push(ns)), clock, released };
}

describe('HeldStarts', () => {
  it('passes bulks without a start to hold as they are', () => {
    const { starts } = held();
    const service = taskNotification(
      'a',
      1,
      'AGENT_EXECUTING',
      0,
      C.executor,
      undefined,
      'service',
    );
    const ns = [service, note('b', 'FAILED')];
    expect(starts.pass(ns)).toBe(ns);
  });

  it("holds an executable's wait for cores and its start, each superseded by the next", () => {
    const { starts, released } = held();
    const waiting = taskNotification(
      'a',
      1,
      'AGENT_SCHEDULING',
      1,
      C.agentScheduler,
      undefined,
      'executable',
    );
    const slots: NotificationDetail = { slots: [{ node: 'n1', cores: [0], gpus: [] }] };
    const start = taskNotification('a', 1, 'AGENT_EXECUTING', 3, C.executor, slots, 'executable');
    expect(starts.pass([waiting])).toEqual([]);
    expect(starts.pass([start])).toEqual([]);
    const back = note('a', 'TMGR_STAGING_OUTPUT_PENDING', 'executable');
    back.ts = 10;
    expect(starts.pass([back])).toEqual([back]);
    // both states kept with their times, and where it ran
    const code = (st: string): number => STATE_CODES.indexOf(st);
    expect(back.detail?.passed).toEqual([code('AGENT_SCHEDULING'), 9, code('AGENT_EXECUTING'), 7]);
    expect(back.detail?.slots).toEqual(slots.slots);
    expect(released).toEqual([]);
  });

  it("gives a dropped start's time, and the times it carried, to the hand-back that supersedes it", () => {
    const { starts } = held();
    const start = taskNotification('a', 1, 'AGENT_EXECUTING', 7, C.executor, undefined, 'function');
    start.detail = { passed: [6, 2] }; // AGENT_STAGING_INPUT at 5, as QuietCarry gives it
    expect(starts.pass([start])).toEqual([]);
    const [back] = starts.pass([note('a', 'TMGR_STAGING_OUTPUT_PENDING')]);
    // [state code, ms before the hand-back's ts 0]: AGENT_STAGING_INPUT at 5, AGENT_EXECUTING at 7
    expect(back!.detail).toEqual({ exitCode: 0, signal: null, passed: [6, -5, 10, -7] });
  });

  it("drops a call's start when its hand-back passes within the hold", () => {
    const { starts, clock, released } = held();
    expect(starts.pass([note('a', 'AGENT_EXECUTING'), note('b', 'AGENT_EXECUTING')])).toEqual([]);
    expect(starts.size).toBe(2);
    clock.advance(START_HOLD_MS - 1);
    expect(states(starts.pass([note('a', 'TMGR_STAGING_OUTPUT_PENDING')]))).toEqual([
      'a:TMGR_STAGING_OUTPUT_PENDING',
    ]);
    // the same bulk: start and hand-back of a quick call
    const quick = starts.pass([
      note('c', 'AGENT_EXECUTING'),
      note('c', 'TMGR_STAGING_OUTPUT_PENDING'),
    ]);
    expect(states(quick)).toEqual(['c:TMGR_STAGING_OUTPUT_PENDING']);
    clock.advance(1);
    // b is due; nothing else was held long enough
    expect(released.map(states)).toEqual([['b:AGENT_EXECUTING']]);
    expect(starts.size).toBe(0);
  });

  it('releases a start that is due, with its own timestamp, and each later one on time', () => {
    const { starts, clock, released } = held();
    starts.pass([note('a', 'AGENT_EXECUTING')]);
    clock.advance(10);
    starts.pass([note('b', 'AGENT_EXECUTING')]);
    clock.advance(START_HOLD_MS - 10);
    expect(released.map(states)).toEqual([['a:AGENT_EXECUTING']]);
    clock.advance(9);
    expect(released).toHaveLength(1);
    clock.advance(1);
    expect(released.map(states)).toEqual([['a:AGENT_EXECUTING'], ['b:AGENT_EXECUTING']]);
    // a hand-back after its start went out is passed as it is
    expect(states(starts.pass([note('a', 'TMGR_STAGING_OUTPUT_PENDING')]))).toEqual([
      'a:TMGR_STAGING_OUTPUT_PENDING',
    ]);
  });

  it('sends the start before a failure or cancel of its call, never hiding it', () => {
    const { starts } = held();
    starts.pass([note('a', 'AGENT_EXECUTING'), note('b', 'AGENT_EXECUTING')]);
    expect(states(starts.pass([note('a', 'FAILED'), note('b', 'CANCELED')]))).toEqual([
      'a:AGENT_EXECUTING',
      'a:FAILED',
      'b:AGENT_EXECUTING',
      'b:CANCELED',
    ]);
  });

  it("sends an older attempt's start before the new attempt's notifications", () => {
    const { starts } = held();
    starts.pass([note('a', 'AGENT_EXECUTING', 'function', 1)]);
    const out = starts.pass([note('a', 'AGENT_EXECUTING', 'function', 2)]);
    expect(out.map((n) => [n.state, n.attempt])).toEqual([['AGENT_EXECUTING', 1]]);
    expect(starts.size).toBe(1);
  });

  it('flush releases every held start at once and cancels the timer', () => {
    const { starts, clock, released } = held();
    starts.pass([note('a', 'AGENT_EXECUTING'), note('b', 'AGENT_EXECUTING')]);
    starts.flush();
    expect(released.map(states)).toEqual([['a:AGENT_EXECUTING', 'b:AGENT_EXECUTING']]);
    clock.advance(START_HOLD_MS * 2);
    expect(released).toHaveLength(1);
  });
});
