import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Task } from '../../../src/client/task';
import type { TaskState } from '../../../src/states/task-model';
import { fixtures } from '../../support/session-fixture';
import { tempDirs } from '../../support/temp-dirs';
import {
  checkStates,
  expectedEnds,
  workflowArb,
  type ExpectedEnd,
  type Outcome,
  type WorkflowTask,
} from '../../support/workflow-model';

/**
 * Issue #14's property on a real session: random DAGs of real `/bin/sh` tasks on a local pilot,
 * each attempt ending as its script says (a counter file tells the attempt), end as the
 * reference model says, with each attempt's callbacks in model order.
 */

/** What attempt n does, as a shell line ($0 is the counter file). */
const ACTION: Partial<Record<Outcome, string>> = {
  ok: 'exit 0',
  exit: 'echo "attempt $n fails" >&2; exit 3',
  signal: 'kill -KILL $$',
  cancel: 'exec sleep 60', // until the test cancels it
};
const SCRIPT =
  'n=$(( $(cat "$0" 2>/dev/null || echo 0) + 1 )); echo $n > "$0"; eval "a=\\${$n}"; eval "$a"';

/** The DAG's uids made unique in the session: `w3-t0`, ... */
function renamed(tasks: WorkflowTask[], prefix: string): WorkflowTask[] {
  return tasks.map((t) => ({
    ...t,
    uid: prefix + t.uid,
    after: t.after.map((d) => ({ ...d, task: prefix + d.task })),
  }));
}

/**
 * What is wrong with how a task ended (empty: nothing): its state, attempt and reason against
 * the model's, the dependency it names, the attempts its counter file saw run.
 */
function problemsOf(task: Task, want: ExpectedEnd, counter: string): string[] {
  const problems: string[] = [];
  const ended = `${task.state} in attempt ${task.attempt} (${task.reason?.code ?? '-'})`;
  const wanted = `${want.state} in attempt ${want.attempts} (${want.code ?? '-'})`;
  if (ended !== wanted) problems.push(`${task.uid} ended ${ended}; want ${wanted}`);
  // every attempt after the first is a retry here (no pilot is lost); the retries used come
  // with an attempt's first state, which the store may deliver after a later one
  if (task.retried !== want.attempts - 1) {
    problems.push(`${task.uid} used ${task.retried} retries; want ${want.attempts - 1}`);
  }
  if (want.code === 'E_DEPENDENCY') {
    const d = task.reason?.detail as { dependency?: string; ended?: string } | undefined;
    if (!want.blockers!.some((b) => b.task === d?.dependency && b.ended === d?.ended)) {
      problems.push(`${task.uid} names ${JSON.stringify(d)}`);
    }
  }
  // a canceled attempt may be killed before its shell counts it
  const ran = fs.existsSync(counter) ? Number(fs.readFileSync(counter, 'utf8')) : 0;
  const runs = want.code === 'E_DEPENDENCY' ? 0 : want.attempts;
  if (ran !== runs && !(want.code === 'E_CANCELED' && ran === runs - 1)) {
    problems.push(`${task.uid} ran ${ran} times; want ${runs}`);
  }
  return problems;
}

/** A few DAGs, the same each time; PF_PROPERTY_IT_RUNS and _SEED explore more. */
const RUNS = Number(process.env.PF_PROPERTY_IT_RUNS ?? 6);
const SEED = Number(process.env.PF_PROPERTY_IT_SEED ?? 14_140);

describe('workflows: random DAGs on a real session', () => {
  const fixture = fixtures();
  const temp = tempDirs('pf-wfp-');

  it(
    'ends every task as its dependencies, retries and script imply, callbacks in order',
    async () => {
      const fx = await fixture.open();
      const dir = temp.make();
      const seen = new Map<string, { state: TaskState; attempt: number }[]>();
      let scripts = new Map<string, Outcome[]>();
      const cancelErrors: string[] = [];
      fx.tmgr.onState((task, state, info) => {
        let list = seen.get(task.uid);
        if (list === undefined) seen.set(task.uid, (list = []));
        list.push({ state, attempt: info.attempt });
        // the user cancels an attempt scripted to hang, once it runs
        if (state === 'AGENT_EXECUTING' && scripts.get(task.uid)?.[info.attempt - 1] === 'cancel') {
          fx.tmgr.cancelTasks([task.uid]).catch((e: unknown) => cancelErrors.push(String(e)));
        }
      });
      // unbiased, or fast-check would spend its few runs on its smallest values; the DAG goes
      // in two calls, so that the second's tasks may wait on ones running or ended
      const arb = fc.noBias(
        fc.tuple(
          workflowArb({ min: 10, max: 15, outcomes: ['ok', 'exit', 'signal', 'cancel'] }),
          fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        ),
      );
      let run = 0;
      await fc.assert(
        fc.asyncProperty(arb, async ([dag, split]) => {
          const tasks = renamed(dag, `w${run++}-`);
          scripts = new Map(tasks.map((t) => [t.uid, t.script]));
          const counter = (uid: string): string => path.join(dir, uid);
          const described = tasks.map((t) => ({
            uid: t.uid,
            after: t.after,
            retries: t.retries,
            executable: '/bin/sh',
            arguments: ['-c', SCRIPT, counter(t.uid), ...t.script.map((o) => ACTION[o]!)],
          }));
          const cut = 1 + Math.floor(split * (tasks.length - 1));
          const submitted = [
            ...(await fx.tmgr.submitTasks(described.slice(0, cut))),
            ...(await fx.tmgr.submitTasks(described.slice(cut))),
          ];
          await fx.tmgr.waitTasks({ uids: tasks.map((t) => t.uid), timeoutMs: 60_000 });
          const expected = expectedEnds(tasks);
          const problems = submitted.flatMap((task) => [
            ...problemsOf(task, expected.get(task.uid)!, counter(task.uid)),
            ...checkStates(task.uid, seen.get(task.uid) ?? [], 'delivered'),
          ]);
          expect(problems).toEqual([]);
          expect(cancelErrors).toEqual([]);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    },
    60_000 + RUNS * 20_000,
  );
});
