import { describe, expect, it } from '@jest/globals';
import { Task } from '../../../src/client/task';
import { Interner } from '../../../src/lib/strings';

describe('Task.history', () => {
  it('gives back every recorded state as it was recorded, packed or not', () => {
    const task = new Task('task.000000', { executable: '/bin/true' });
    const entries = [
      { state: 'TMGR_SCHEDULING_PENDING', attempt: 1, inferred: false, ts: 1_795_000_000_123 },
      { state: 'TMGR_SCHEDULING', attempt: 1, inferred: true },
      { state: 'AGENT_EXECUTING', attempt: 1, inferred: false, ts: 0 },
      { state: 'FAILED', attempt: 1, inferred: false, ts: 12.5 }, // fractional: not packed
      { state: 'TMGR_SCHEDULING_PENDING', attempt: 2, inferred: false, ts: 2 ** 42 }, // too late
      { state: 'DONE', attempt: 40, inferred: false, ts: 7 }, // attempt beyond the packed code
      { state: 'CANCELED', attempt: 31, inferred: true, ts: 2 ** 42 - 1 },
    ];
    for (const e of entries) task.record(e.state, e.attempt, e.inferred, e.ts);
    expect(task.history).toEqual(entries);
    expect(task.history).not.toBe(task.history); // a fresh array per read
  });

  it('refuses a state that is not a task state', () => {
    const task = new Task('task.000000', { executable: '/bin/true' });
    expect(() => task.record('PMGR_ACTIVE', 1, false, 1)).toThrow(/not a task state: PMGR_ACTIVE/);
  });
});

describe('Task.sandbox', () => {
  it('is the path the agent reported, whether or not it lies under a shared directory', () => {
    const dirs = new Interner();
    const a = new Task('task.000001', { executable: '/bin/true' });
    const b = new Task('task.000002', { executable: '/bin/true' });
    const odd = new Task('task.000003', { executable: '/bin/true' });
    expect(a.sandbox).toBeUndefined();
    a.setSandbox('/s/pilot.0000/task.000001', dirs);
    b.setSandbox('/s/pilot.0000/task.000002', dirs);
    odd.setSandbox('/elsewhere/task.000003.d', dirs);
    expect([a.sandbox, b.sandbox, odd.sandbox]).toEqual([
      '/s/pilot.0000/task.000001',
      '/s/pilot.0000/task.000002',
      '/elsewhere/task.000003.d',
    ]);
    odd.setSandbox('task.000003', dirs); // no directory part at all
    expect(odd.sandbox).toBe('task.000003');
  });
});
