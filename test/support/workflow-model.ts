import fc from 'fast-check';
import { isFinalState } from '../../src/states/model';
import type { ReasonCode } from '../../src/states/reason-codes';
import { TASK_MODEL, TASK_RETRY_STATE, type FinalTaskState } from '../../src/states/task-model';

/**
 * Random workflows and what they must end in, for the property tests of dependencies and
 * retries (issue #14): a DAG of tasks, each with a script of how its attempts end, and a
 * reference model, written plainly, of the final state and attempt count each task implies.
 */

export type Condition = 'done' | 'final' | 'failed';

/**
 * How one attempt of a task ends. `ok`: exit 0. `exit`, `signal`, `timeout`: failures another
 * attempt may fix (E_EXIT_CODE, E_SIGNALED, E_TASK_TIMEOUT). `notFound`: one it may not (the
 * executable is missing: E_EXEC_NOT_FOUND, ended by the agent). `cancel`: the attempt hangs
 * until the user cancels it.
 */
export type Outcome = 'ok' | 'exit' | 'signal' | 'timeout' | 'notFound' | 'cancel';

export interface WorkflowTask {
  uid: string;
  after: { task: string; on: Condition }[];
  retries: number;
  /** Attempt n ends as script[n - 1] (past the end: ok). */
  script: Outcome[];
}

/** The end a task's dependencies, retries and script imply. */
export interface ExpectedEnd {
  state: FinalTaskState;
  /** Attempts it takes (a task canceled for a dependency takes its first only). */
  attempts: number;
  /** Why it ended; none for DONE. */
  code?: ReasonCode;
  /**
   * For E_DEPENDENCY: each dependency whose end rules the task out (any of them may be the one
   * named: which ended first is a matter of timing) and how it ended.
   */
  blockers?: { task: string; on: Condition; ended: FinalTaskState }[];
}

const FAILURE: Record<Exclude<Outcome, 'ok' | 'cancel'>, ReasonCode> = {
  exit: 'E_EXIT_CODE',
  signal: 'E_SIGNALED',
  timeout: 'E_TASK_TIMEOUT',
  notFound: 'E_EXEC_NOT_FOUND',
};
const RETRYABLE: ReadonlySet<Outcome> = new Set<Outcome>(['exit', 'signal', 'timeout']);

/** Whether a dependency that ended `ended` lets a task waiting `on` it run. */
export function conditionHolds(on: Condition, ended: FinalTaskState): boolean {
  if (on === 'final') return true;
  return on === 'done' ? ended === 'DONE' : ended === 'FAILED';
}

/**
 * The reference model: the end of every task, by recursion over its dependencies.
 * `userCanceled` (uid -> attempt) names tasks the user canceled while that attempt was live,
 * outside their scripts; such a task ends CANCELED in that attempt, unless its agent ended
 * that attempt itself (a missing executable) before the cancel reached it: then either end is
 * right, and `actual` (the state it did end in) says which one its dependents see.
 */
export function expectedEnds(
  tasks: readonly WorkflowTask[],
  userCanceled: ReadonlyMap<string, number> = new Map(),
  actual: (uid: string) => FinalTaskState | undefined = () => undefined,
): Map<string, ExpectedEnd> {
  const byUid = new Map(tasks.map((t) => [t.uid, t]));
  const ends = new Map<string, ExpectedEnd>();

  const endOf = (uid: string): ExpectedEnd => {
    let end = ends.get(uid);
    if (end === undefined) {
      end = decide(byUid.get(uid)!);
      ends.set(uid, end);
    }
    return end;
  };

  const decide = (t: WorkflowTask): ExpectedEnd => {
    const blockers = t.after
      .map((d) => ({ ...d, ended: endOf(d.task).state }))
      .filter((d) => !conditionHolds(d.on, d.ended));
    const unaided: ExpectedEnd =
      blockers.length > 0
        ? { state: 'CANCELED', attempts: 1, code: 'E_DEPENDENCY', blockers }
        : runScript(t);
    const canceledIn = userCanceled.get(t.uid);
    if (canceledIn === undefined) return unaided;
    if (canceledIn > unaided.attempts) {
      throw new Error(`${t.uid} was canceled in attempt ${canceledIn}, which it never reaches`);
    }
    const agentEnded = unaided.code === 'E_EXEC_NOT_FOUND' && canceledIn === unaided.attempts;
    if (agentEnded && actual(t.uid) === unaided.state) return unaided;
    return { state: 'CANCELED', attempts: canceledIn, code: 'E_CANCELED' };
  };

  for (const t of tasks) endOf(t.uid);
  return ends;
}

function runScript(t: WorkflowTask): ExpectedEnd {
  for (let attempt = 1; ; attempt++) {
    const outcome = t.script[attempt - 1] ?? 'ok';
    if (outcome === 'ok') return { state: 'DONE', attempts: attempt };
    if (outcome === 'cancel') return { state: 'CANCELED', attempts: attempt, code: 'E_CANCELED' };
    if (RETRYABLE.has(outcome) && attempt <= t.retries) continue;
    return { state: 'FAILED', attempts: attempt, code: FAILURE[outcome] };
  }
}

/** Outcomes, weighted so that most tasks finish and every kind of end is common enough. */
export function outcomeArb(kinds: readonly Outcome[]): fc.Arbitrary<Outcome> {
  const weight: Record<Outcome, number> = {
    ok: 6,
    exit: 3,
    signal: 1,
    timeout: 1,
    notFound: 1,
    cancel: 1,
  };
  return fc.oneof(...kinds.map((k) => ({ weight: weight[k], arbitrary: fc.constant(k) })));
}

/**
 * A random DAG of `min`..`max` tasks: each waits on a few earlier ones (so it is acyclic by
 * construction), with random conditions, 0-3 retries and a script of attempt outcomes.
 */
export function workflowArb(
  opts: { min: number; max: number; outcomes: readonly Outcome[]; prefix?: string } = {
    min: 1,
    max: 40,
    outcomes: ['ok', 'exit', 'signal', 'timeout', 'notFound', 'cancel'],
  },
): fc.Arbitrary<WorkflowTask[]> {
  const prefix = opts.prefix ?? 't';
  const on = fc.oneof(
    { weight: 3, arbitrary: fc.constant<Condition>('done') },
    { weight: 2, arbitrary: fc.constant<Condition>('final') },
    { weight: 1, arbitrary: fc.constant<Condition>('failed') },
  );
  const task = (i: number): fc.Arbitrary<WorkflowTask> =>
    fc.record({
      uid: fc.constant(`${prefix}${i}`),
      after:
        i === 0
          ? fc.constant([])
          : fc
              // the same dependency may come twice, with two conditions
              .array(fc.nat(i - 1), { maxLength: Math.min(i, 3) })
              .chain((deps) => fc.tuple(...deps.map(() => on)).map((ons) => ({ deps, ons })))
              .map(({ deps, ons }) => deps.map((d, k) => ({ task: `${prefix}${d}`, on: ons[k]! }))),
      retries: fc.integer({ min: 0, max: 3 }),
      script: fc.array(outcomeArb(opts.outcomes), { minLength: 4, maxLength: 4 }),
    });
  return fc
    .integer({ min: opts.min, max: opts.max })
    .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => task(i))));
}

/**
 * Checks one task's states against the task model, in the order they came. `notified`: the
 * notifications its holders sent, each with its component: attempt 1 starts from NEW; every
 * state is a step of the model made by its owner; attempt n + 1 follows attempt n, starts with
 * its retry state, and is started by the holder of the state attempt n stopped in.
 * `delivered`: the callbacks a client fired: attempts ascend (an attempt whose states never
 * reached the store may be missing) and within one each state is a step of the model from the
 * one before. Either way one final state, the last. Returns the problems found (none: empty).
 */
export function checkStates(
  uid: string,
  steps: readonly { state: string; attempt: number; component?: string }[],
  mode: 'notified' | 'delivered',
): string[] {
  const problems: string[] = [];
  let attempt = 0;
  let prev: string = 'NEW';
  let finals = 0;
  for (const [i, s] of steps.entries()) {
    const at = `${uid} step ${i} (${s.state}, attempt ${s.attempt})`;
    if (finals > 0) problems.push(`${at}: after the final state`);
    if (s.attempt !== attempt) {
      const next = mode === 'notified' ? s.attempt === attempt + 1 : s.attempt > attempt;
      if (!next) problems.push(`${at}: follows attempt ${attempt}`);
      if (mode === 'notified' && s.attempt > 1) {
        if (s.state !== TASK_RETRY_STATE) {
          problems.push(`${at}: a new attempt starts with ${s.state}, not ${TASK_RETRY_STATE}`);
        }
        // only the holder of where the last attempt stopped may start the next one
        if (s.component !== undefined && TASK_MODEL.holders[prev] !== s.component) {
          problems.push(`${at}: started by ${s.component}, but ${prev} is not its state`);
        }
      }
      attempt = s.attempt;
      prev = attempt === 1 ? 'NEW' : TASK_RETRY_STATE;
      if (s.state === prev) continue; // the attempt's start, not a step
    }
    const step = TASK_MODEL.transitions.find((x) => x.from === prev && x.to === s.state);
    if (step === undefined || (s.component !== undefined && step.owner !== s.component)) {
      problems.push(`${at}: ${prev} -> ${s.state} by ${s.component ?? '?'} is not in the model`);
    }
    if (isFinalState(s.state)) finals++;
    prev = s.state;
  }
  if (finals !== 1) problems.push(`${uid}: ${finals} final states`);
  return problems;
}
