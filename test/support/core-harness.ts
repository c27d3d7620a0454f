import { expect, it } from '@jest/globals';
import { IllegalTransitionError } from '../../src/errors';
import type { Notification, TaskRecord } from '../../src/generated';
import { silentLogger, type Logger } from '../../src/lib/logger';
import { TASK_STATES, type TaskState } from '../../src/states/task-model';
import { FakeClock } from './fake-clock';
import { notifyLine, taskIn, uidsLine, type TaskOverrides } from './fixtures';
import { EffectRecorder } from './recorder';

export { notifyLine, pilotIn, taskIn, type TaskOverrides, uidsLine } from './fixtures';

/** The effects every task component has: report transitions, hand tasks on. */
export interface TaskEffects {
  notify(ns: Notification[]): void;
  forward(ts: TaskRecord[]): void;
}

/**
 * The fakes a decision-core test needs, built once (tako's tests/utils/env.rs): a recorder
 * the effects write readable lines to, the fake clock, the silent logger, and what notify and
 * forward were given. A test drives the core, checks `rec.take()`, and ends with
 * `expectNoMore()`.
 */
export class CoreHarness {
  readonly rec = new EffectRecorder();
  readonly clock = new FakeClock();
  readonly logger: Logger = silentLogger;
  readonly notes: Notification[] = [];
  readonly forwarded: TaskRecord[] = [];

  /** Records `notify t1 STATE, t2 STATE` and keeps the notifications in `notes`. */
  readonly notify = (ns: Notification[]): void => {
    this.notes.push(...ns);
    this.rec.record(notifyLine(ns));
  };

  /** Records `forward t1, t2` and keeps the tasks in `forwarded`. */
  readonly forward = (ts: TaskRecord[]): void => {
    this.forwarded.push(...ts);
    this.rec.record(uidsLine('forward', ts));
  };

  /** The fields of a notification `component` sends about task `uid` now: add its state. */
  readonly noteBase = (component: string, uid = 't1') => ({
    kind: 'task',
    uid,
    attempt: 1,
    ts: this.clock.now(),
    component,
  });

  /** notify and forward, plus (or overridden by) the component's own effects. */
  effects<Own extends object>(own: Own): TaskEffects & Own {
    return { notify: this.notify, forward: this.forward, ...own };
  }

  /** An effect taking tasks, recorded as `<verb> t1, t2`. */
  uids(verb: string): (ts: readonly { uid: string }[]) => void {
    return (ts) => this.rec.record(uidsLine(verb, ts));
  }

  expectNoMore(): void {
    this.rec.expectNoMore();
  }
}

/** A task record `uid` in `state`: `taskRecord('t2', 'AGENT_EXECUTING', { pilot: 'p1' })`. */
export function taskRecord(
  uid: string,
  state: TaskState,
  overrides: TaskOverrides = {},
): TaskRecord {
  return taskIn(state, { ...overrides, uid });
}

/** Why the agent ends the tasks it holds on shutdown. */
export const AGENT_SHUTDOWN = {
  code: 'E_PILOT_ENDED' as const,
  message: 'the agent is shutting down',
  component: 'Agent',
};

/** Why the client's components end the tasks they hold when the session closes. */
export const SESSION_CLOSED = {
  code: 'E_CANCELED' as const,
  message: 'the session was closed',
  component: 'Session',
};

/** The reason a component gives a task the user canceled. */
export function canceledByUser(component: string) {
  return { code: 'E_CANCELED', message: 'task canceled by the user', component };
}

/** What the hand-over tests need of a set-up task core. */
interface TaskCoreSetup {
  rec: EffectRecorder;
  notes: Notification[];
  core: { onTasks(ts: TaskRecord[]): void; onCancel(uids: string[]): void };
}

export interface HandOverSpec<S extends TaskCoreSetup> {
  /** The one state the component receives tasks in. */
  from: TaskState;
  setup: () => S;
  /** The setup for the tasks handed over in another state (default: setup). */
  setupOthers?: () => S;
  /** A task in `from`, ready for the component. */
  pending: (uid: string) => TaskRecord;
  /** Takes a received task to the end of the component's states (after onTasks). */
  finish?: (s: S) => void;
  /** The states a received task goes through, after `from`. */
  walk: TaskState[];
  /** What a task in another state carries besides its state (e.g. its pilot). */
  others?: TaskOverrides;
  /**
   * The bulk refusal: a good task next to one in `wrong` is refused whole; `after` checks the
   * good one was not taken in. Left out where the test file writes its own.
   */
  bulk?: { wrong: TaskState; after?: (s: S, ok: TaskRecord) => void };
}

/**
 * The hand-over tests every task component shares (call inside its `describe('hand-over')`):
 * it walks a task received in `from` through its states, and refuses a task (or a bulk
 * holding one) in any other state.
 */
export function handOverTests<S extends TaskCoreSetup>(spec: HandOverSpec<S>): void {
  const setupOthers = spec.setupOthers ?? spec.setup;
  const others = TASK_STATES.filter((st) => st !== spec.from);

  it(`receives a task in ${spec.from} and walks it through every state it owns`, () => {
    const s = spec.setup();
    s.core.onTasks([spec.pending('t1')]);
    spec.finish?.(s);
    expect([spec.from, ...s.notes.map((n) => n.state)]).toEqual([spec.from, ...spec.walk]);
    s.rec.take();
    s.rec.expectNoMore();
  });

  it.each(others)('throws IllegalTransitionError for a task handed over in %s', (state) => {
    const s = setupOthers();
    const t = taskIn(state, spec.others);
    expect(() => s.core.onTasks([t])).toThrow(IllegalTransitionError);
    expect(t.state).toBe(state);
    s.rec.expectNoMore();
  });

  it.each(others)(
    'throws for a task handed over in %s even when its cancel came first',
    (state) => {
      const s = setupOthers();
      s.core.onCancel(['t1']);
      const t = taskIn(state, spec.others);
      expect(() => s.core.onTasks([t])).toThrow(IllegalTransitionError);
      expect(t.state).toBe(state);
      s.rec.expectNoMore();
    },
  );

  const bulk = spec.bulk;
  if (bulk !== undefined) {
    it('rejects a bulk holding a task in another state without touching any of it', () => {
      const s = spec.setup();
      const ok = spec.pending('ok');
      const wrong = taskRecord('wrong', bulk.wrong, spec.others);
      expect(() => s.core.onTasks([ok, wrong])).toThrow(IllegalTransitionError);
      expect(ok.state).toBe(spec.from);
      bulk.after?.(s, ok);
      s.rec.expectNoMore();
    });
  }
}
