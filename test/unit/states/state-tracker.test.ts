import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { isFinal, rankOf, type StateModel } from '../../../src/states/model';
import type { Notification } from '../../../src/states/notification';
import { PILOT_MODEL } from '../../../src/states/pilot-model';
import { StateTracker, type Emission } from '../../../src/states/state-tracker';
import { TASK_MODEL, TASK_RETRY_STATE, type TaskState } from '../../../src/states/task-model';

function note(
  state: Notification['state'],
  attempt = 1,
  uid = 't1',
  kind: 'task' | 'pilot' = 'task',
): Notification {
  return { kind, uid, attempt, state, ts: 0, component: 'test' };
}

/** `STATE@attempt`, with a `*` when inferred. */
function brief(emissions: readonly Emission[]): string[] {
  return emissions.map((e) => `${e.state}@${e.attempt}${e.inferred ? '*' : ''}`);
}

function taskTracker(): StateTracker {
  return new StateTracker(TASK_MODEL, TASK_RETRY_STATE);
}

function feed(tracker: StateTracker, notifications: readonly Notification[]): Emission[] {
  return notifications.flatMap((n) => tracker.ingest(n));
}

const TASK_NON_FINAL = TASK_MODEL.states.filter((s) => !isFinal(TASK_MODEL, s));

/** The task's non-final states from `from` to `to` (both included), at `attempt`. */
function span(from: TaskState, to: TaskState, attempt = 1, inferred = false): string[] {
  const a = TASK_NON_FINAL.indexOf(from);
  const b = TASK_NON_FINAL.indexOf(to);
  return TASK_NON_FINAL.slice(a, b + 1).map((s) => `${s}@${attempt}${inferred ? '*' : ''}`);
}

describe('StateTracker', () => {
  it('delivers notifications that arrive in order as they are, none inferred', () => {
    const t = taskTracker();
    const out = feed(t, [note('NEW'), note('TMGR_SCHEDULING_PENDING'), note('TMGR_SCHEDULING')]);
    expect(brief(out)).toEqual(['NEW@1', 'TMGR_SCHEDULING_PENDING@1', 'TMGR_SCHEDULING@1']);
    expect(out.every((e) => e.uid === 't1' && e.notification?.state === e.state)).toBe(true);
  });

  it('carries the notification that delivered a state', () => {
    const n = note('NEW');
    const [e] = taskTracker().ingest(n);
    expect(e).toEqual({ uid: 't1', state: 'NEW', attempt: 1, inferred: false, notification: n });
  });

  it('drops duplicates and late arrivals at or below the current state', () => {
    const t = taskTracker();
    feed(t, [note('NEW'), note('TMGR_SCHEDULING_PENDING')]);
    expect(t.ingest(note('TMGR_SCHEDULING_PENDING'))).toEqual([]);
    expect(t.ingest(note('NEW'))).toEqual([]);
    expect(brief(t.ingest(note('TMGR_SCHEDULING')))).toEqual(['TMGR_SCHEDULING@1']);
  });

  it('fills a jump forward with the skipped states in model order, marked inferred', () => {
    const t = taskTracker();
    t.ingest(note('NEW'));
    const out = t.ingest(note('AGENT_STAGING_INPUT'));
    expect(brief(out)).toEqual([
      ...span('TMGR_SCHEDULING_PENDING', 'AGENT_STAGING_INPUT_PENDING', 1, true),
      'AGENT_STAGING_INPUT@1',
    ]);
    expect(out.filter((e) => e.inferred).every((e) => e.notification === undefined)).toBe(true);
  });

  it('infers from NEW when the first notification is a later state', () => {
    const out = taskTracker().ingest(note('TMGR_SCHEDULING'));
    expect(brief(out)).toEqual(['NEW@1*', 'TMGR_SCHEDULING_PENDING@1*', 'TMGR_SCHEDULING@1']);
  });

  it('delivers every state when DONE arrives alone', () => {
    const t = taskTracker();
    const out = t.ingest(note('DONE'));
    expect(brief(out)).toEqual([...span('NEW', 'TMGR_STAGING_OUTPUT', 1, true), 'DONE@1']);
    expect(t.current('t1')).toEqual({ state: 'DONE', attempt: 1, final: true });
  });

  it.each(['FAILED', 'CANCELED'] as const)('delivers %s alone, with nothing inferred', (final) => {
    const t = taskTracker();
    expect(brief(t.ingest(note(final)))).toEqual([`${final}@1`]);
    expect(t.current('t1')).toEqual({ state: final, attempt: 1, final: true });

    const t2 = taskTracker();
    t2.ingest(note('TMGR_SCHEDULING'));
    expect(brief(t2.ingest(note(final)))).toEqual([`${final}@1`]);
  });

  it.each(['DONE', 'FAILED', 'CANCELED'] as const)('drops everything after %s', (final) => {
    const t = taskTracker();
    t.ingest(note('AGENT_EXECUTING'));
    expect(t.ingest(note(final))).not.toEqual([]);
    const late = [
      note('AGENT_STAGING_OUTPUT'),
      note('TMGR_STAGING_OUTPUT'),
      note('DONE'),
      note('FAILED'),
      note('CANCELED'),
      note('TMGR_SCHEDULING_PENDING', 2),
      note('DONE', 2),
    ];
    expect(feed(t, late)).toEqual([]);
    expect(t.current('t1')).toEqual({ state: final, attempt: 1, final: true });
  });

  it('ignores an older attempt', () => {
    const t = taskTracker();
    t.ingest(note('TMGR_SCHEDULING', 2));
    expect(feed(t, [note('NEW', 1), note('AGENT_EXECUTING', 1), note('FAILED', 1)])).toEqual([]);
    expect(t.current('t1')).toEqual({ state: 'TMGR_SCHEDULING', attempt: 2, final: false });
  });

  it('restarts a newer attempt at TMGR_SCHEDULING_PENDING', () => {
    const t = taskTracker();
    feed(t, [note('NEW'), note('AGENT_EXECUTING')]);
    const out = t.ingest(note('AGENT_SCHEDULING', 2));
    expect(brief(out)).toEqual([
      ...span('TMGR_SCHEDULING_PENDING', 'AGENT_SCHEDULING_PENDING', 2, true),
      'AGENT_SCHEDULING@2',
    ]);
    // the rest of attempt 1 is never delivered
    expect(t.ingest(note('AGENT_STAGING_OUTPUT', 1))).toEqual([]);
    expect(brief(t.ingest(note('AGENT_EXECUTING_PENDING', 2)))).toEqual([
      'AGENT_EXECUTING_PENDING@2',
    ]);
  });

  it('delivers the retry state itself when a newer attempt starts there', () => {
    const t = taskTracker();
    t.ingest(note('AGENT_EXECUTING'));
    expect(brief(t.ingest(note('TMGR_SCHEDULING_PENDING', 2)))).toEqual([
      'TMGR_SCHEDULING_PENDING@2',
    ]);
  });

  it('starts a first sight of attempt > 1 at the retry state, not at NEW', () => {
    const t = taskTracker();
    expect(brief(t.ingest(note('TMGR_STAGING_INPUT', 3)))).toEqual([
      ...span('TMGR_SCHEDULING_PENDING', 'TMGR_STAGING_INPUT_PENDING', 3, true),
      'TMGR_STAGING_INPUT@3',
    ]);
    expect(brief(taskTracker().ingest(note('DONE', 2)))).toEqual([
      ...span('TMGR_SCHEDULING_PENDING', 'TMGR_STAGING_OUTPUT', 2, true),
      'DONE@2',
    ]);
    expect(brief(taskTracker().ingest(note('FAILED', 2)))).toEqual(['FAILED@2']);
  });

  it('ignores states the model does not know', () => {
    const t = taskTracker();
    expect(t.ingest(note('PMGR_ACTIVE'))).toEqual([]);
    expect(t.current('t1')).toBeUndefined();
    expect(brief(t.ingest(note('NEW')))).toEqual(['NEW@1']);
  });

  it('tracks each uid on its own, and forgets one on request', () => {
    const t = taskTracker();
    expect(brief(feed(t, [note('DONE', 1, 'a'), note('NEW', 1, 'b')]))).toHaveLength(
      TASK_NON_FINAL.length + 2,
    );
    expect(t.current('a')?.state).toBe('DONE');
    expect(t.current('b')?.state).toBe('NEW');
    expect(t.current('c')).toBeUndefined();
    t.forget('a');
    expect(t.current('a')).toBeUndefined();
    expect(brief(t.ingest(note('NEW', 1, 'a')))).toEqual(['NEW@1']);
  });

  it('follows the pilot model when built on it', () => {
    const t = new StateTracker(PILOT_MODEL);
    const p = (state: Notification['state']): Notification => note(state, 1, 'p1', 'pilot');
    expect(brief(t.ingest(p('PMGR_LAUNCHING')))).toEqual([
      'NEW@1*',
      'PMGR_LAUNCHING_PENDING@1*',
      'PMGR_LAUNCHING@1',
    ]);
    expect(t.ingest(p('PMGR_LAUNCHING_PENDING'))).toEqual([]);
    expect(brief(t.ingest(p('DONE')))).toEqual([
      'PMGR_ACTIVE_PENDING@1*',
      'PMGR_ACTIVE@1*',
      'DONE@1',
    ]);
    expect(t.ingest(p('FAILED'))).toEqual([]);
    expect(brief(new StateTracker(PILOT_MODEL).ingest(p('CANCELED')))).toEqual(['CANCELED@1']);
    expect(new StateTracker(PILOT_MODEL).ingest(p('AGENT_EXECUTING'))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties: any arrival order, with duplicates and losses, of the notifications of a real path.

type State = Notification['state'];

interface Step {
  state: State;
  attempt: number;
}

interface PathSpec {
  model: StateModel<State>;
  /** Where attempts > 1 start (undefined: the model has no retry). */
  retryState?: State;
  maxAttempts: number;
}

const TASK_SPEC: PathSpec = { model: TASK_MODEL, retryState: TASK_RETRY_STATE, maxAttempts: 3 };
const PILOT_SPEC: PathSpec = { model: PILOT_MODEL, maxAttempts: 1 };

function trackerFor(spec: PathSpec): StateTracker<State> {
  return spec.retryState === undefined
    ? new StateTracker(spec.model)
    : new StateTracker(spec.model, spec.retryState);
}

function startOf(spec: PathSpec, attempt: number): number {
  return attempt === 1 || spec.retryState === undefined ? 0 : rankOf(spec.model, spec.retryState);
}

/**
 * A path an entity can really take: attempts 1..n-1 are retried, so each is a prefix of the
 * non-final states with no final state; the last attempt ends in DONE (having passed every
 * state), in FAILED or CANCELED after any non-final state, or is still open.
 */
function pathArb(spec: PathSpec): fc.Arbitrary<Step[]> {
  const nonFinal = spec.model.states.filter((s) => !isFinal(spec.model, s));
  const [, failed, canceled] = spec.model.finals;
  return fc
    .record({
      attempts: fc.integer({ min: 1, max: spec.maxAttempts }),
      cuts: fc.array(fc.nat(), { minLength: spec.maxAttempts, maxLength: spec.maxAttempts }),
      end: fc.constantFrom('success', 'failed', 'canceled', 'open'),
    })
    .map(({ attempts, cuts, end }) => {
      const path: Step[] = [];
      for (let a = 1; a <= attempts; a++) {
        const start = startOf(spec, a);
        const last = a === attempts;
        const stop =
          last && end === 'success'
            ? nonFinal.length - 1
            : start + (cuts[a - 1]! % (nonFinal.length - start));
        for (let i = start; i <= stop; i++) path.push({ state: nonFinal[i]!, attempt: a });
        if (last && end === 'success') path.push({ state: spec.model.success, attempt: a });
        if (last && end === 'failed') path.push({ state: failed!, attempt: a });
        if (last && end === 'canceled') path.push({ state: canceled!, attempt: a });
      }
      return path;
    });
}

function notesOf(spec: PathSpec, path: readonly Step[], uid = 'u1'): Notification[] {
  return path.map((s) => note(s.state, s.attempt, uid, spec.model.name));
}

/** Every notification of the path at least once, in any order, with duplicates. */
function completeFeedArb(spec: PathSpec): fc.Arbitrary<{ path: Step[]; fed: number[] }> {
  return pathArb(spec).chain((path) =>
    fc
      .array(fc.nat({ max: path.length - 1 }), { maxLength: path.length })
      .chain((dups) => {
        const all = [...path.keys(), ...dups];
        return fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length });
      })
      .map((fed) => ({ path, fed })),
  );
}

/** Some of the path's notifications (maybe none, maybe lost ones), any order, duplicates. */
function lossyFeedArb(spec: PathSpec): fc.Arbitrary<{ path: Step[]; fed: number[] }> {
  return pathArb(spec).chain((path) =>
    fc
      .array(fc.nat({ max: path.length - 1 }), { maxLength: path.length * 2 })
      .map((fed) => ({ path, fed })),
  );
}

const keyOf = (s: { state: string; attempt: number }): string => `${s.state}@${s.attempt}`;

/**
 * The invariants that hold for any feed drawn from a real path. Returns the violations (plain
 * checks, one expect per run: expect() per emission makes the properties ten times slower).
 */
function violations(
  spec: PathSpec,
  path: readonly Step[],
  fed: readonly Notification[],
  out: readonly Emission[],
): string[] {
  const { model } = spec;
  const [, failed, canceled] = model.finals;
  const uid = fed[0]?.uid;
  const bad: string[] = [];
  const check = (ok: boolean, what: string): void => {
    if (!ok) bad.push(what);
  };

  // at most one emission per (state, attempt)
  const keys = out.map(keyOf);
  check(new Set(keys).size === keys.length, `duplicate emission in ${keys.join(' ')}`);

  // model order within an attempt, attempts ascending
  for (let i = 1; i < out.length; i++) {
    const a = out[i - 1]!;
    const b = out[i]!;
    check(b.attempt >= a.attempt, `attempt goes down: ${keyOf(a)} then ${keyOf(b)}`);
    check(
      b.attempt !== a.attempt || rankOf(model, b.state) > rankOf(model, a.state),
      `out of model order: ${keyOf(a)} then ${keyOf(b)}`,
    );
  }

  // only states of the path; a delivered state came with a notification that was fed,
  // an inferred one with none
  const pathKeys = new Set(path.map(keyOf));
  for (const e of out) {
    check(e.uid === uid, `wrong uid ${e.uid}`);
    check(pathKeys.has(keyOf(e)), `${keyOf(e)} is not on the path`);
    if (e.inferred) {
      check(e.notification === undefined, `inferred ${keyOf(e)} carries a notification`);
    } else {
      const n = e.notification;
      check(n !== undefined && fed.includes(n), `${keyOf(e)} has no fed notification`);
      check(n !== undefined && keyOf(n) === keyOf(e), `${keyOf(e)} carries another state`);
    }
  }

  // within an attempt: a contiguous run from the attempt's start state, then maybe FAILED
  // or CANCELED (which may also come alone)
  for (const attempt of new Set(out.map((e) => e.attempt))) {
    const run = out.filter(
      (e) => e.attempt === attempt && e.state !== failed && e.state !== canceled,
    );
    run.forEach((e, i) =>
      check(rankOf(model, e.state) === startOf(spec, attempt) + i, `gap before ${keyOf(e)}`),
    );
  }

  // a final state is the last word; the path's last notification, once fed, is the last emission
  const finals = out.filter((e) => isFinal(model, e.state));
  const last = out[out.length - 1];
  check(finals.length <= 1, `several finals: ${finals.map(keyOf).join(' ')}`);
  check(finals.length === 0 || last === finals[0], 'a final state is not the last emission');
  const lastStep = path[path.length - 1]!;
  if (fed.some((n) => keyOf(n) === keyOf(lastStep))) {
    check(
      last !== undefined && keyOf(last) === keyOf(lastStep) && !last.inferred,
      `last emission ${last && keyOf(last)} is not the path's end ${keyOf(lastStep)}`,
    );
  }
  return bad;
}

describe.each([
  ['task', TASK_SPEC],
  ['pilot', PILOT_SPEC],
] as [string, PathSpec][])('StateTracker properties (%s model)', (_name, spec) => {
  it('delivers an in-order feed exactly as the path, nothing inferred', () => {
    fc.assert(
      fc.property(pathArb(spec), (path) => {
        const notes = notesOf(spec, path);
        const out = feed(trackerFor(spec), notes);
        expect(brief(out)).toEqual(path.map(keyOf));
        expect(out.map((e) => e.notification)).toEqual(notes);
        expect(violations(spec, path, notes, out)).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it('ignores re-sent earlier notifications mixed into an in-order feed', () => {
    const arb = pathArb(spec).chain((path) =>
      fc
        .array(fc.array(fc.nat(), { maxLength: 3 }), {
          minLength: path.length,
          maxLength: path.length,
        })
        .map((resends) => ({ path, resends })),
    );
    fc.assert(
      fc.property(arb, ({ path, resends }) => {
        const notes = notesOf(spec, path);
        // after the i-th notification, re-send some of notifications 0..i
        const fed = notes.flatMap((n, i) => [n, ...resends[i]!.map((r) => notes[r % (i + 1)]!)]);
        const out = feed(trackerFor(spec), fed);
        expect(brief(out)).toEqual(path.map(keyOf));
        expect(violations(spec, path, fed, out)).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it('holds its invariants for every notification in any order, with duplicates', () => {
    fc.assert(
      fc.property(completeFeedArb(spec), ({ path, fed }) => {
        const notes = notesOf(spec, path);
        const fedNotes = fed.map((i) => notes[i]!);
        const out = feed(trackerFor(spec), fedNotes);
        expect(violations(spec, path, fedNotes, out)).toEqual([]);
        // every notification was fed, so the history reaches the path's end
        expect(keyOf(out[out.length - 1]!)).toBe(keyOf(path[path.length - 1]!));
        // and the last attempt is complete unless it failed or was canceled out of order
        const lastAttempt = path[path.length - 1]!.attempt;
        const lastStep = path[path.length - 1]!;
        if (!isFinal(spec.model, lastStep.state) || lastStep.state === spec.model.success) {
          expect(
            brief(out.filter((e) => e.attempt === lastAttempt)).map((s) => s.replace('*', '')),
          ).toEqual(path.filter((s) => s.attempt === lastAttempt).map(keyOf));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('holds its invariants when notifications are lost, reordered and duplicated', () => {
    fc.assert(
      fc.property(lossyFeedArb(spec), ({ path, fed }) => {
        const notes = notesOf(spec, path);
        const fedNotes = fed.map((i) => notes[i]!);
        expect(violations(spec, path, fedNotes, feed(trackerFor(spec), fedNotes))).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps entities apart when their feeds interleave', () => {
    const arb = fc.tuple(completeFeedArb(spec), completeFeedArb(spec)).chain(([a, b]) => {
      const tagged = [
        ...a.fed.map((i) => ({ uid: 'a', i })),
        ...b.fed.map((i) => ({ uid: 'b', i })),
      ];
      return fc
        .shuffledSubarray(tagged, { minLength: tagged.length, maxLength: tagged.length })
        .map((order) => ({ a, b, order }));
    });
    fc.assert(
      fc.property(arb, ({ a, b, order }) => {
        const notes = { a: notesOf(spec, a.path, 'a'), b: notesOf(spec, b.path, 'b') };
        const fed = order.map(({ uid, i }) => notes[uid as 'a' | 'b'][i]!);
        const out = feed(trackerFor(spec), fed);
        for (const [uid, { path }] of [
          ['a', a],
          ['b', b],
        ] as const) {
          const mine = fed.filter((n) => n.uid === uid);
          expect(
            violations(
              spec,
              path,
              mine,
              out.filter((e) => e.uid === uid),
            ),
          ).toEqual([]);
        }
      }),
      { numRuns: 200 },
    );
  });
});
