import { describe, expect, it } from '@jest/globals';
import type { TaskHistoryEntry } from '../../../src/client/task';
import { Task } from '../../../src/client/task';
import { mulberry32 } from '../../../src/lib/prng';
import { Interner } from '../../../src/lib/strings';
import {
  FINAL_TASK_STATES,
  TASK_STATES,
  isFinalTaskState,
  type TaskState,
} from '../../../src/states/task-model';

interface Recorded {
  state: TaskState;
  attempt: number;
  inferred: boolean;
  ts: number | undefined;
}

/**
 * The plain reference: each recorded state as it was recorded, without ts when none was given
 * (or NaN); -0 comes back as 0 where the entry packs into one number (an attempt below 32).
 */
function reference(recorded: readonly Recorded[]): TaskHistoryEntry[] {
  return recorded.map(({ state, attempt, inferred, ts }) => {
    const entry: TaskHistoryEntry = { state, attempt, inferred };
    if (ts !== undefined && !Number.isNaN(ts)) {
      entry.ts = Object.is(ts, -0) && attempt < 32 ? 0 : ts;
    }
    return entry;
  });
}

/** The task's private trail: an array while it lives, a string once final and encodable. */
function trailOf(task: Task): unknown {
  return (task as unknown as { trail: unknown }).trail;
}

const NON_FINAL = TASK_STATES.filter((s) => !isFinalTaskState(s));
const FINAL = FINAL_TASK_STATES;
const MS_2026 = 1_767_225_600_000;

/**
 * Random histories from a seed: random states, attempts and inferred flags; ms timestamps that
 * step forward and back, with large gaps, 0 and 2^53 - 1. `odd` adds the rare ts that no
 * compact form keeps exactly: fractional, negative, -0, beyond 2^53, infinite, NaN.
 */
function randomHistories(seed: number, odd: boolean) {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const int = (n: number): number => Math.floor(rnd() * n);
  let clock = MS_2026;
  const attempt = (): number => (rnd() < 0.8 ? 1 + int(3) : pick([0, 31, 32, 40, 1000, 2 ** 40]));
  const ts = (inferred: boolean): number | undefined => {
    if (inferred && rnd() < 0.8) return undefined;
    const r = rnd();
    if (odd && r < 0.15) {
      return pick([
        0.5,
        clock + 0.25,
        -1,
        -MS_2026,
        -0,
        2 ** 53,
        2 ** 53 + 2,
        1e300,
        Infinity,
        NaN,
      ]);
    }
    if (r < 0.55) {
      clock += int(2_000); // the next component, a little later
    } else if (r < 0.75) {
      clock = Math.max(0, clock - int(50)); // an earlier clock
    } else if (r < 0.85) {
      clock += int(2 ** 36); // a long queue
    } else if (r < 0.88) {
      return undefined;
    } else if (r < 0.92) {
      return 0;
    } else if (r < 0.94) {
      return 2 ** 53 - 1;
    } else if (r < 0.97) {
      return 2 ** 42 + int(1_000); // just past what an array entry packs
    } else {
      clock = int(2 ** 20); // a clock near the epoch
    }
    return clock;
  };
  const entry = (states: readonly TaskState[]): Recorded => {
    const inferred = rnd() < 0.25;
    return { state: pick(states), attempt: attempt(), inferred, ts: ts(inferred) };
  };
  return () => {
    const live = Array.from({ length: int(30) }, () => entry(NON_FINAL));
    const after = Array.from({ length: int(4) }, () => entry(rnd() < 0.5 ? FINAL : NON_FINAL));
    return { live, final: entry(FINAL), after };
  };
}

describe('Task.history', () => {
  it('gives back every recorded state as it was recorded, packed or not', () => {
    const task = new Task('task.000000', { executable: '/bin/true' });
    const entries: TaskHistoryEntry[] = [
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

  it('is the reference history before and after the task becomes final', () => {
    for (const odd of [false, true]) {
      const next = randomHistories(odd ? 2 : 1, odd);
      const forms = { string: 0, array: 0 };
      for (let n = 0; n < 1_000; n++) {
        const { live, final } = next();
        const task = new Task('task.000000', { executable: '/bin/true' });
        for (const e of live) task.record(e.state, e.attempt, e.inferred, e.ts);
        expect(task.history).toEqual(reference(live));
        task.record(final.state, final.attempt, final.inferred, final.ts);
        expect(task.history).toEqual(reference([...live, final]));
        forms[typeof trailOf(task) === 'string' ? 'string' : 'array']++;
      }
      // integer ms timestamps, however far apart, always take the compact form
      if (!odd) expect(forms).toEqual({ string: 1_000, array: 0 });
      else expect(forms.array).toBeGreaterThan(250);
    }
  });

  it('goes on recording after a final state, decoding the compact form first', () => {
    for (const odd of [false, true]) {
      const next = randomHistories(odd ? 4 : 3, odd);
      for (let n = 0; n < 500; n++) {
        const { live, final, after } = next();
        const task = new Task('task.000000', { executable: '/bin/true' });
        for (const e of [...live, final]) task.record(e.state, e.attempt, e.inferred, e.ts);
        const recorded = [...live, final];
        for (const e of after) {
          task.record(e.state, e.attempt, e.inferred, e.ts);
          recorded.push(e);
          expect(task.history).toEqual(reference(recorded));
        }
      }
    }
  });

  it('keeps a final history of ms timestamps in a few bytes per state', () => {
    const task = new Task('task.000000', { executable: '/bin/true' });
    const recorded: Recorded[] = [];
    let ts = MS_2026;
    for (const [i, state] of TASK_STATES.slice(0, 16).entries()) {
      const inferred = i % 5 === 3;
      ts += 10 + 150 * i;
      recorded.push({ state, attempt: 1, inferred, ts: inferred ? undefined : ts });
    }
    recorded.splice(3, 0, { state: 'TMGR_STAGING_INPUT', attempt: 1, inferred: false, ts: ts - 9 });
    for (const e of recorded) task.record(e.state, e.attempt, e.inferred, e.ts);
    const trail = trailOf(task);
    expect(typeof trail).toBe('string');
    expect((trail as string).length).toBeLessThanOrEqual(3 * recorded.length + 8);
    expect([...(trail as string)].every((c) => c.charCodeAt(0) < 256)).toBe(true); // one-byte
    expect(task.history).toEqual(reference(recorded));
  });

  it('refuses a state that is not a task state', () => {
    const task = new Task('task.000000', { executable: '/bin/true' });
    expect(() => task.record('PMGR_ACTIVE' as TaskState, 1, false, 1)).toThrow(
      /not a task state: PMGR_ACTIVE/,
    );
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
